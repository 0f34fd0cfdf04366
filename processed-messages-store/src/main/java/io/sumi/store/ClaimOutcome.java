package io.sumi.store;

/**
 * What a claim found.
 */
public enum ClaimOutcome {

    /** The caller now holds the message: run the handler, then complete or release it. */
    CLAIMED,

    /** The message was already completed: acknowledge it and skip the handler. */
    DUPLICATE,

    /**
     * Another consumer holds a live lease on the message. Do not acknowledge it: let the broker
     * deliver it again later, when the other consumer has completed or released it.
     *
     * <p>A row held for reconciliation ({@link MessageStatus#RECONCILE}) also comes back as
     * {@code BUSY}: it is not to be run. Callers tell it apart by the row's status.
     */
    BUSY
}
