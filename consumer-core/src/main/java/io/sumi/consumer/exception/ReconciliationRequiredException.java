package io.sumi.consumer.exception;

import io.sumi.consumer.HandlerDefinition;

/**
 * The message's outcome is uncertain and it is not run again: its lease-mode claim was taken over
 * after the message had first been claimed longer ago than the downstream provider's
 * idempotency-key window ({@link HandlerDefinition#reconcileAfter()}), so the provider may no
 * longer recognise the key and a retry could repeat the effect (charge a card twice). The ledger
 * row is {@code RECONCILE} until an operator has checked the provider and completed or deleted it.
 *
 * <p>Not retryable: error handlers should dead-letter the message at once, so it stays visible
 * next to its ledger row.
 *
 * @since 0.1.0
 */
public class ReconciliationRequiredException extends IdempotencyException {

    private final String consumer;
    private final String key;

    public ReconciliationRequiredException(String consumer, String key, String message) {
        super(message);
        this.consumer = consumer;
        this.key = key;
    }

    /** The ledger namespace of the message. */
    public String consumer() {
        return consumer;
    }

    /** The message's idempotency key, which is also the key the provider saw. */
    public String key() {
        return key;
    }

    /** {@link Verdict#RECONCILE}. */
    @Override
    public Verdict verdict() {
        return Verdict.RECONCILE;
    }

    @Override
    public boolean isRetryable() {
        return false;
    }
}
