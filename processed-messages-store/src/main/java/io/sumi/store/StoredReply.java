package io.sumi.store;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * The reply a handler returned, as the ledger keeps it next to the message's row so that a
 * duplicate of the request is answered with the same reply (see
 * {@link ProcessedMessageStore#complete(ProcessedMessage, StoredReply)}).
 *
 * <p>The store keeps bytes and text only: turning the handler's reply object into them (and back)
 * is the binder's work, which also decides which headers belong to the reply itself and which to
 * the request it answered (a correlation id, a reply address: those come from the new request when
 * the stored reply is sent again, never from the stored one).
 *
 * @param payload the reply's body, as bytes
 * @param headers the reply's own headers, in order (names and values are text); empty for none
 * @since 0.1.0
 */
// An array component is safe here: the payload is copied in and out, and equals, hashCode and
// toString below use its contents.
@SuppressWarnings("ArrayRecordComponent")
public record StoredReply(byte[] payload, Map<String, String> headers) {

    public StoredReply {
        Objects.requireNonNull(payload, "payload");
        payload = payload.clone();
        Map<String, String> copy = new LinkedHashMap<>();
        headers.forEach((name, value) ->
                copy.put(Objects.requireNonNull(name, "header name"), Objects.requireNonNull(value, name)));
        headers = Collections.unmodifiableMap(copy);
    }

    /** The body (a copy). */
    @Override
    public byte[] payload() {
        return payload.clone();
    }

    /** The header {@code name}, or {@code null}. */
    public @Nullable String header(String name) {
        return headers.get(name);
    }

    /**
     * How many bytes the ledger needs for this reply: the body, plus each header's name and value
     * as UTF-8, plus 9 bytes of framing and 8 per header (the JDBC store's column holds exactly
     * this many). What {@code sumi.consumer.reply.max-size} limits.
     */
    public int size() {
        long size = 9L + payload.length;
        for (Map.Entry<String, String> header : headers.entrySet()) {
            size += 8L + utf8Length(header.getKey()) + utf8Length(header.getValue());
        }
        return (int) Math.min(Integer.MAX_VALUE, size);
    }

    private static long utf8Length(String text) {
        return text.getBytes(StandardCharsets.UTF_8).length;
    }

    @Override
    public boolean equals(@Nullable Object other) {
        return other instanceof StoredReply that
                && Arrays.equals(payload, that.payload)
                && headers.equals(that.headers);
    }

    @Override
    public int hashCode() {
        return 31 * Arrays.hashCode(payload) + headers.hashCode();
    }

    @Override
    public String toString() {
        return "StoredReply[" + payload.length + " bytes, headers=" + headers.keySet() + "]";
    }
}
