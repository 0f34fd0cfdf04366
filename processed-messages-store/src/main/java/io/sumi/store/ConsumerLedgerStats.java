package io.sumi.store;

import java.time.Duration;
import java.util.Objects;

/**
 * What an operator watches in one consumer's part of the ledger (the gauges
 * {@code sumi.ledger.claims.oldest.age} and {@code sumi.ledger.reconciliation.held}).
 *
 * @param consumer the ledger namespace
 * @param oldestLiveClaimAge how long ago the oldest message that is claimed right now (an
 *     {@code IN_PROGRESS} row whose lease has not ended) was first claimed, by the store's clock;
 *     {@link Duration#ZERO} when the consumer holds no live claim
 * @param heldForReconciliation rows in {@link MessageStatus#RECONCILE}, waiting for an operator
 * @since 0.1.0
 */
public record ConsumerLedgerStats(String consumer, Duration oldestLiveClaimAge, long heldForReconciliation) {

    public ConsumerLedgerStats {
        Objects.requireNonNull(consumer, "consumer");
        Objects.requireNonNull(oldestLiveClaimAge, "oldestLiveClaimAge");
        if (oldestLiveClaimAge.isNegative()) {
            // The first claim and "now" come from one clock; a negative age is a clock step back.
            oldestLiveClaimAge = Duration.ZERO;
        }
    }

    /** A consumer with no live claim and nothing held. */
    public static ConsumerLedgerStats idle(String consumer) {
        return new ConsumerLedgerStats(consumer, Duration.ZERO, 0);
    }
}
