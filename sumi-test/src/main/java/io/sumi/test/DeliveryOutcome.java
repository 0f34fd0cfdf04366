package io.sumi.test;

/**
 * How one delivery of a message to a consumer ended, as the kit saw it. For a consumer guarded by
 * {@code @IdempotentHandler} these are Sumi's outcomes (the {@code outcome} tag of
 * {@code sumi.messages}); a listener without Sumi only ever has {@code PROCESSED} (it returned) and
 * {@code FAILED} (it threw).
 */
public enum DeliveryOutcome {
    /** The handler ran and returned (and, with Sumi, the ledger recorded the key completed). */
    PROCESSED,
    /** Sumi found the key completed and skipped the handler. */
    DUPLICATE,
    /** Sumi found a live claim of another delivery: not acknowledged, delivered again later. */
    BUSY,
    /** The handler threw, or the ledger could not complete the key after it ran. */
    FAILED,
    /** Sumi refused the message before running it (no usable key, a rejected fingerprint). */
    REJECTED,
    /** Sumi held the message for reconciliation instead of running it again. */
    RECONCILE
}
