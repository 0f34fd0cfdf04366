package io.sumi.outbox;

import java.time.Instant;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * A row of the outbox table, as the dispatcher hands it to an {@link OutboxPublisher} and as
 * {@link OutboxTable} shows it to operators. Immutable.
 *
 * @param id the row id, sent as {@link OutboxHeaders#OUTBOX_ID}
 * @param aggregateId the broker key
 * @param topic the destination
 * @param payload the body, exactly as appended
 * @param headers the headers written at append time (without {@link OutboxHeaders#OUTBOX_ID})
 * @param createdAt when the row was appended
 * @param availableAt when it may be sent next (moved forward by the backoff after a failure)
 * @param dispatchedAt when it was dispatched, or {@code null} while it is pending
 * @param attempts how many sends of it have failed
 * @param lastError the last failure, or {@code null}
 * @param parkedAt when it was parked after too many failures, or {@code null}
 * @param outcome how it was dispatched, or {@code null} while it is pending
 */
public record OutboxRecord(
        long id,
        String aggregateId,
        String topic,
        String payload,
        Map<String, String> headers,
        Instant createdAt,
        Instant availableAt,
        @Nullable Instant dispatchedAt,
        int attempts,
        @Nullable String lastError,
        @Nullable Instant parkedAt,
        @Nullable DispatchOutcome outcome) {

    public OutboxRecord {
        Objects.requireNonNull(aggregateId, "aggregateId");
        Objects.requireNonNull(topic, "topic");
        Objects.requireNonNull(payload, "payload");
        headers = Collections.unmodifiableMap(new LinkedHashMap<>(headers));
    }

    /** The id as sent in the {@link OutboxHeaders#OUTBOX_ID} header. */
    public String outboxId() {
        return Long.toString(id);
    }

    /** The headers to send: {@link OutboxHeaders#OUTBOX_ID} first, then the appended ones. */
    public Map<String, String> brokerHeaders() {
        Map<String, String> all = new LinkedHashMap<>();
        all.put(OutboxHeaders.OUTBOX_ID, outboxId());
        all.putAll(headers);
        return all;
    }

    /** Whether the row is still to be dispatched. */
    public boolean pending() {
        return dispatchedAt == null;
    }

    /** Whether the row is parked: pending, but not retried until an operator re-drives it. */
    public boolean parked() {
        return parkedAt != null && dispatchedAt == null;
    }
}
