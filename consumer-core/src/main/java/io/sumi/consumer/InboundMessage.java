package io.sumi.consumer;

import io.sumi.consumer.exception.InvalidIdempotencyKeyException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * A received message as the consumer core sees it: a broker-neutral view that binders build from
 * a Kafka {@code ConsumerRecord}, a Spring {@code Message} or a Rabbit message.
 */
public interface InboundMessage {

    /** The record or message as the broker delivered it (the SpEL variable {@code #message}). */
    Object source();

    /** The payload (the SpEL variable {@code #payload}); may be {@code null} (a Kafka tombstone). */
    @Nullable
    Object payload();

    /** The last value of a header, or {@code null}. */
    @Nullable
    Object header(String name);

    /** All headers, last value per name (the SpEL variable {@code #headers}). */
    Map<String, @Nullable Object> headers();

    /**
     * The payload's fingerprint, compared when a key arrives again ({@code null}: not compared).
     * By default {@link Fingerprints#of} the payload; binders override it to hash the raw bytes.
     */
    default @Nullable String fingerprint() {
        return Fingerprints.of(payload());
    }

    /**
     * A header value as a key: byte arrays are decoded as strict UTF-8, other values with
     * {@code toString()}; {@code null} when absent.
     *
     * <p>Lossless: bytes that are not valid UTF-8 are rejected, never decoded with replacement
     * characters, which would turn two different binary keys into one string (and skip the second
     * message as a duplicate).
     *
     * @throws InvalidIdempotencyKeyException (not retryable) if a byte array is not valid UTF-8
     */
    static @Nullable String text(@Nullable Object value) {
        if (value == null) {
            return null;
        }
        if (value instanceof byte[] bytes) {
            String text = utf8OrNull(bytes);
            if (text == null) {
                throw new InvalidIdempotencyKeyException(
                        "An idempotency key header holds " + bytes.length + " bytes that are"
                                + " not valid UTF-8; keys must be text, and decoding them with replacement characters would make"
                                + " different keys collide. Send the key as UTF-8 text (e.g. hex or Base64 of a binary id)");
            }
            return text;
        }
        return value.toString();
    }

    /**
     * A header value as {@code #headers} in a key expression shows it: byte arrays that are valid
     * UTF-8 as text, others unchanged (so that a key made of them is rejected by {@link #text},
     * and an unrelated binary header does not fail the message).
     *
     * @since 0.1.0
     */
    static @Nullable Object headerValue(@Nullable Object value) {
        if (value instanceof byte[] bytes) {
            String text = utf8OrNull(bytes);
            return text != null ? text : bytes;
        }
        return value;
    }

    private static @Nullable String utf8OrNull(byte[] bytes) {
        try {
            return StandardCharsets.UTF_8
                    .newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(bytes))
                    .toString();
        } catch (CharacterCodingException ex) {
            return null;
        }
    }

    /** A simple message, for tests and for callers that have no broker record (it is its own source). */
    static InboundMessage of(@Nullable Object payload, Map<String, @Nullable Object> headers) {
        return of(null, payload, headers);
    }

    /**
     * A simple message whose {@link #source()} (the SpEL variable {@code #message}) is
     * {@code source}, or the message itself when {@code source} is {@code null}.
     */
    static InboundMessage of(@Nullable Object source, @Nullable Object payload, Map<String, @Nullable Object> headers) {
        return new InboundMessage() {
            @Override
            public Object source() {
                return source != null ? source : this;
            }

            @Override
            public @Nullable Object payload() {
                return payload;
            }

            @Override
            public @Nullable Object header(String name) {
                return headers.get(name);
            }

            @Override
            public Map<String, @Nullable Object> headers() {
                return headers;
            }

            @Override
            public String toString() {
                return "InboundMessage[headers=" + headers.keySet() + "]";
            }
        };
    }
}
