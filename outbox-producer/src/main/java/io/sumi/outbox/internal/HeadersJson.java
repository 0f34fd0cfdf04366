package io.sumi.outbox.internal;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * The {@code headers} column: a flat JSON object of string values, written and read without a JSON
 * library. Reading also accepts numbers, booleans and {@code null} (kept as their text, or dropped
 * for {@code null}), since operators and backfill queries write this column by hand; nested
 * objects and arrays are rejected.
 */
public final class HeadersJson {

    private HeadersJson() {}

    /** Writes {@code headers} as a JSON object, in iteration order. */
    public static String write(Map<String, String> headers) {
        if (headers.isEmpty()) {
            return "{}";
        }
        StringBuilder json = new StringBuilder(32 * headers.size()).append('{');
        boolean first = true;
        for (Map.Entry<String, String> header : headers.entrySet()) {
            if (!first) {
                json.append(',');
            }
            first = false;
            quote(json, header.getKey()).append(':');
            quote(json, header.getValue());
        }
        return json.append('}').toString();
    }

    private static StringBuilder quote(StringBuilder json, String text) {
        json.append('"');
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            switch (c) {
                case '"' -> json.append("\\\"");
                case '\\' -> json.append("\\\\");
                case '\n' -> json.append("\\n");
                case '\r' -> json.append("\\r");
                case '\t' -> json.append("\\t");
                case '\b' -> json.append("\\b");
                case '\f' -> json.append("\\f");
                default -> {
                    if (c < 0x20) {
                        json.append(String.format("\\u%04x", (int) c));
                    } else {
                        json.append(c);
                    }
                }
            }
        }
        return json.append('"');
    }

    /**
     * Reads a JSON object of scalar values.
     *
     * @throws IllegalArgumentException if {@code json} is not such an object
     */
    public static Map<String, String> read(String json) {
        Parser parser = new Parser(json);
        Map<String, String> headers = parser.object();
        parser.skipWhitespace();
        if (!parser.atEnd()) {
            throw parser.error("unexpected text after the object");
        }
        return Collections.unmodifiableMap(headers);
    }

    private static final class Parser {

        private final String text;
        private int position;

        Parser(String text) {
            this.text = text;
        }

        Map<String, String> object() {
            skipWhitespace();
            expect('{');
            Map<String, String> values = new LinkedHashMap<>();
            skipWhitespace();
            if (peek() == '}') {
                position++;
                return values;
            }
            while (true) {
                skipWhitespace();
                String name = string();
                skipWhitespace();
                expect(':');
                skipWhitespace();
                String value = scalar();
                if (value != null) {
                    values.put(name, value);
                }
                skipWhitespace();
                char next = next();
                if (next == '}') {
                    return values;
                }
                if (next != ',') {
                    throw error("expected ',' or '}'");
                }
            }
        }

        /** The value, or {@code null} for a JSON {@code null} (such a header is left out). */
        private @Nullable String scalar() {
            char c = peek();
            if (c == '"') {
                return string();
            }
            if (c == '{' || c == '[') {
                throw error("header values must be strings, numbers or booleans, not objects or arrays");
            }
            int start = position;
            while (!atEnd() && ",} \t\r\n".indexOf(text.charAt(position)) < 0) {
                position++;
            }
            String literal = text.substring(start, position);
            if (literal.equals("null")) {
                return null;
            }
            if (literal.equals("true")
                    || literal.equals("false")
                    || literal.matches("-?\\d+(\\.\\d+)?([eE][+-]?\\d+)?")) {
                return literal;
            }
            throw error("unexpected value '" + literal + "'");
        }

        private String string() {
            expect('"');
            StringBuilder value = new StringBuilder();
            while (true) {
                char c = next();
                if (c == '"') {
                    return value.toString();
                }
                if (c != '\\') {
                    value.append(c);
                    continue;
                }
                char escaped = next();
                switch (escaped) {
                    case '"', '\\', '/' -> value.append(escaped);
                    case 'n' -> value.append('\n');
                    case 'r' -> value.append('\r');
                    case 't' -> value.append('\t');
                    case 'b' -> value.append('\b');
                    case 'f' -> value.append('\f');
                    case 'u' -> {
                        if (position + 4 > text.length()) {
                            throw error("truncated \\u escape");
                        }
                        value.append((char) Integer.parseInt(text.substring(position, position + 4), 16));
                        position += 4;
                    }
                    default -> throw error("invalid escape \\" + escaped);
                }
            }
        }

        void skipWhitespace() {
            while (!atEnd() && Character.isWhitespace(text.charAt(position))) {
                position++;
            }
        }

        boolean atEnd() {
            return position >= text.length();
        }

        private char peek() {
            if (atEnd()) {
                throw error("unexpected end");
            }
            return text.charAt(position);
        }

        private char next() {
            char c = peek();
            position++;
            return c;
        }

        private void expect(char expected) {
            if (next() != expected) {
                position--;
                throw error("expected '" + expected + "'");
            }
        }

        IllegalArgumentException error(String problem) {
            String shown = text.length() > 200 ? text.substring(0, 200) + "..." : text;
            return new IllegalArgumentException(
                    "Invalid outbox headers JSON (" + problem + " at position " + position + "): " + shown);
        }
    }
}
