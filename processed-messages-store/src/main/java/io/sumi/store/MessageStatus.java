package io.sumi.store;

/**
 * The status of a ledger row.
 */
public enum MessageStatus {

    /** A consumer holds a lease on the message and is running its handler. */
    IN_PROGRESS,

    /** The handler completed; every later delivery of the message is a duplicate. */
    COMPLETED,

    /**
     * The outcome is uncertain: the message was claimed, never completed, and is older than the
     * downstream provider's idempotency-key window, so running it again could repeat its effect.
     * It is never claimed again on its own: an operator checks the provider and then completes or
     * deletes the row (see the documentation on paid APIs). Kept by pruning.
     *
     * @since 0.1.0
     */
    RECONCILE
}
