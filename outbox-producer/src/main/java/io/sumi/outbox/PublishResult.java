package io.sumi.outbox;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What an {@link OutboxPublisher} reports for a batch: the records that failed, with their
 * failures. Every other record of the batch was acknowledged. Immutable.
 *
 * @param failures the failed records' ids and why each failed
 */
public record PublishResult(Map<Long, Throwable> failures) {

    private static final PublishResult ALL_SENT = new PublishResult(Map.of());

    public PublishResult {
        failures = Collections.unmodifiableMap(new LinkedHashMap<>(failures));
    }

    /** Every record was acknowledged. */
    public static PublishResult allSent() {
        return ALL_SENT;
    }

    /** The records with these ids failed; the others were acknowledged. */
    public static PublishResult failed(Map<Long, Throwable> failures) {
        return new PublishResult(failures);
    }

    /** Whether the record with this id was acknowledged. */
    public boolean sent(long id) {
        return !failures.containsKey(id);
    }
}
