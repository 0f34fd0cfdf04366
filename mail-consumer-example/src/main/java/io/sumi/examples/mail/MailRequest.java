package io.sumi.examples.mail;

import jakarta.mail.internet.AddressException;
import jakarta.mail.internet.InternetAddress;
import java.util.Locale;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * A mail to send, as it arrives on the topic, in one of two forms.
 *
 * <p>JSON:
 * <pre>{"to": "alice@example.com", "subject": "Your order has shipped", "body": "Hello Alice, ..."}</pre>
 *
 * <p>Simple text: header lines, a blank line, the body:
 * <pre>
 * To: alice@example.com
 * Subject: Your order has shipped
 *
 * Hello Alice, ...
 * </pre>
 *
 * @param to one recipient address
 * @param subject the subject (may be empty)
 * @param body the plain-text body (may be empty)
 */
public record MailRequest(String to, String subject, String body) {

    private static final JsonMapper JSON = JsonMapper.builder().build();

    public MailRequest {
        if (to == null || to.isBlank()) {
            throw new InvalidMailRequestException("A mail request needs a recipient ('to')");
        }
        try {
            new InternetAddress(to.trim(), true);
        } catch (AddressException ex) {
            throw new InvalidMailRequestException("Invalid recipient '" + to + "': " + ex.getMessage(), ex);
        }
        to = to.trim();
        subject = subject == null ? "" : subject;
        body = body == null ? "" : body;
    }

    /**
     * Reads a payload in either form.
     *
     * @throws InvalidMailRequestException if it is neither, or has no valid recipient
     */
    public static MailRequest parse(String payload) {
        if (payload == null || payload.isBlank()) {
            throw new InvalidMailRequestException("Empty mail request");
        }
        String text = payload.strip();
        return text.startsWith("{") ? fromJson(text) : fromText(payload);
    }

    private static MailRequest fromJson(String json) {
        JsonNode node;
        try {
            node = JSON.readTree(json);
        } catch (JacksonException ex) {
            throw new InvalidMailRequestException("Mail request is not valid JSON: " + ex.getOriginalMessage(), ex);
        }
        if (!node.isObject()) {
            throw new InvalidMailRequestException("A JSON mail request must be an object with to, subject and body");
        }
        return new MailRequest(field(node, "to"), field(node, "subject"), field(node, "body"));
    }

    private static String field(JsonNode node, String name) {
        JsonNode value = node.get(name);
        if (value == null || value.isNull()) {
            return null;
        }
        if (!value.isString()) {
            throw new InvalidMailRequestException("Field '" + name + "' of a mail request must be a string");
        }
        return value.stringValue();
    }

    private static MailRequest fromText(String text) {
        String to = null;
        String subject = null;
        String normalized = text.replace("\r\n", "\n");
        int end = normalized.indexOf("\n\n");
        String head = end < 0 ? normalized : normalized.substring(0, end);
        String body = end < 0 ? "" : normalized.substring(end + 2);
        for (String line : head.split("\n", -1)) {
            int colon = line.indexOf(':');
            if (colon <= 0) {
                throw new InvalidMailRequestException(
                        "Not a mail request: expected JSON, or 'To:' and 'Subject:' lines,"
                                + " a blank line and the body; found the line '" + abbreviate(line) + "'");
            }
            String name = line.substring(0, colon).trim().toLowerCase(Locale.ROOT);
            String value = line.substring(colon + 1).trim();
            switch (name) {
                case "to" -> to = value;
                case "subject" -> subject = value;
                default ->
                    throw new InvalidMailRequestException(
                            "Unknown field '" + abbreviate(name) + "' in a text mail request (known: To, Subject)");
            }
        }
        return new MailRequest(to, subject, body);
    }

    private static String abbreviate(String text) {
        return text.length() > 60 ? text.substring(0, 60) + "…" : text;
    }

    /** This request in the simple text form. */
    public String toText() {
        return "To: " + to + "\nSubject: " + subject + "\n\n" + body;
    }

    /** This request as JSON. */
    public String toJson() {
        return JSON.createObjectNode()
                .put("to", to)
                .put("subject", subject)
                .put("body", body)
                .toString();
    }
}
