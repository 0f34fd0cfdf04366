package io.sumi.outbox;

import java.time.Duration;
import java.time.Instant;
import org.jspecify.annotations.Nullable;

/**
 * A snapshot of the outbox's backlog, read in one query.
 *
 * @param pending rows not dispatched yet and not parked (including rows scheduled for later and
 *     rows waiting out a backoff)
 * @param parked rows parked after too many failed sends, waiting for an operator
 * @param oldestDueAt the earliest {@code available_at} among the pending rows, or {@code null}
 *     when there are none
 * @param oldestPendingAge how long the most overdue pending row has been due (zero when none is due)
 */
public record OutboxStats(
        long pending, long parked, @Nullable Instant oldestDueAt, Duration oldestPendingAge) {

    /** The stats of an empty outbox. */
    public static final OutboxStats EMPTY = new OutboxStats(0, 0, null, Duration.ZERO);
}
