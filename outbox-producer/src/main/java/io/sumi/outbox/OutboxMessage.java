package io.sumi.outbox;

import java.time.Duration;
import java.time.Instant;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * A message to append to the outbox. Immutable; build one with {@link #builder} or {@link #of}.
 *
 * @param aggregateId what the message is about (an order id, a user id): the broker key, so the
 *     messages of one aggregate go to one partition, and the unit of ordering; at most
 *     {@value #MAX_AGGREGATE_ID_LENGTH} characters
 * @param topic where the message goes; at most {@value #MAX_TOPIC_LENGTH} characters
 * @param payload the message body, sent as is (usually JSON)
 * @param headers headers sent with the message, in order; {@link OutboxHeaders#OUTBOX_ID} is
 *     reserved for the dispatcher
 * @param availableAt the earliest time the message may be sent, or {@code null}
 * @param delay how long after the append the message may be sent, or {@code null}; at most one of
 *     {@code availableAt} and {@code delay} is set
 */
public record OutboxMessage(
        String aggregateId,
        String topic,
        String payload,
        Map<String, String> headers,
        @Nullable Instant availableAt,
        @Nullable Duration delay) {

    /** The longest aggregate id the outbox table holds. */
    public static final int MAX_AGGREGATE_ID_LENGTH = 200;

    /** The longest topic the outbox table holds. */
    public static final int MAX_TOPIC_LENGTH = 255;

    /**
     * @throws IllegalArgumentException if the aggregate id or topic is blank or too long, a header
     *     name is blank or reserved, both {@code availableAt} and {@code delay} are given, or the
     *     delay is negative
     */
    public OutboxMessage {
        requireText("aggregate id", aggregateId, MAX_AGGREGATE_ID_LENGTH);
        requireText("topic", topic, MAX_TOPIC_LENGTH);
        Objects.requireNonNull(payload, "payload");
        Map<String, String> copy = new LinkedHashMap<>();
        for (Map.Entry<String, String> header : headers.entrySet()) {
            String name = header.getKey();
            if (name == null || name.isBlank()) {
                throw new IllegalArgumentException("Outbox header names must not be blank");
            }
            if (name.equals(OutboxHeaders.OUTBOX_ID)) {
                throw new IllegalArgumentException("The header '" + OutboxHeaders.OUTBOX_ID
                        + "' is reserved: the dispatcher sets it to the row id");
            }
            copy.put(name, Objects.requireNonNull(header.getValue(), () -> "value of header '" + name + "'"));
        }
        headers = Collections.unmodifiableMap(copy);
        if (availableAt != null && delay != null) {
            throw new IllegalArgumentException("Give either availableAt or delay, not both");
        }
        if (delay != null && delay.isNegative()) {
            throw new IllegalArgumentException("The delay must not be negative, was " + delay);
        }
    }

    private static void requireText(String what, @Nullable String value, int maxLength) {
        if (value == null || value.isBlank()) {
            throw new IllegalArgumentException("The outbox message's " + what + " must not be blank");
        }
        if (value.length() > maxLength) {
            throw new IllegalArgumentException("The outbox message's " + what + " is " + value.length()
                    + " characters long; at most " + maxLength + " fit (it is not truncated)");
        }
    }

    /** A message without headers, to send at once. */
    public static OutboxMessage of(String aggregateId, String topic, String payload) {
        return new OutboxMessage(aggregateId, topic, payload, Map.of(), null, null);
    }

    /** Starts a builder. */
    public static Builder builder(String aggregateId, String topic, String payload) {
        return new Builder(aggregateId, topic, payload);
    }

    /** The earliest time this message may be sent, for an append at {@code now}. */
    public Instant availableAt(Instant now) {
        if (availableAt != null) {
            return availableAt.isBefore(now) ? now : availableAt;
        }
        return delay != null ? now.plus(delay) : now;
    }

    /** Builds an {@link OutboxMessage}. Not thread-safe. */
    public static final class Builder {

        private final String aggregateId;
        private final String topic;
        private final String payload;
        private final Map<String, String> headers = new LinkedHashMap<>();
        private @Nullable Instant availableAt;
        private @Nullable Duration delay;

        private Builder(String aggregateId, String topic, String payload) {
            this.aggregateId = aggregateId;
            this.topic = topic;
            this.payload = payload;
        }

        /** Adds a header (replacing one of the same name). */
        public Builder header(String name, String value) {
            headers.put(name, value);
            return this;
        }

        /** Adds headers (replacing ones of the same names). */
        public Builder headers(Map<String, String> headers) {
            this.headers.putAll(headers);
            return this;
        }

        /** The payload's schema version, sent as {@link OutboxHeaders#SCHEMA_VERSION}. */
        public Builder schemaVersion(String schemaVersion) {
            return header(OutboxHeaders.SCHEMA_VERSION, schemaVersion);
        }

        /** The tenant, sent as {@link OutboxHeaders#TENANT_ID}. */
        public Builder tenant(String tenant) {
            return header(OutboxHeaders.TENANT_ID, tenant);
        }

        /** The trace id, sent as {@link OutboxHeaders#TRACE_ID}; by default it is taken from the MDC. */
        public Builder traceId(String traceId) {
            return header(OutboxHeaders.TRACE_ID, traceId);
        }

        /** Sends the message no earlier than {@code delay} after the append ("welcome mail in 3 minutes"). */
        public Builder delay(Duration delay) {
            this.delay = delay;
            this.availableAt = null;
            return this;
        }

        /** Sends the message no earlier than {@code availableAt} (now, if that is in the past). */
        public Builder availableAt(Instant availableAt) {
            this.availableAt = availableAt;
            this.delay = null;
            return this;
        }

        /**
         * Builds the message.
         *
         * @throws IllegalArgumentException as {@link OutboxMessage#OutboxMessage} does
         */
        public OutboxMessage build() {
            return new OutboxMessage(aggregateId, topic, payload, headers, availableAt, delay);
        }
    }
}
