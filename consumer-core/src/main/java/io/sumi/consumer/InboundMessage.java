package io.sumi.consumer;

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
    @Nullable Object payload();

    /** The last value of a header, or {@code null}. */
    @Nullable Object header(String name);

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
     * A header value as text: byte arrays are decoded as UTF-8, other values with
     * {@code toString()}; {@code null} when absent.
     */
    static @Nullable String text(@Nullable Object value) {
        if (value == null) {
            return null;
        }
        if (value instanceof byte[] bytes) {
            return new String(bytes, StandardCharsets.UTF_8);
        }
        return value.toString();
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
