package io.sumi.consumer.exception;

import io.sumi.consumer.FingerprintMismatchPolicy;

/**
 * A key arrived again with another payload and the handler's policy is
 * {@link FingerprintMismatchPolicy#REJECT}. Not retryable.
 */
public class FingerprintMismatchException extends IdempotencyException {

    public FingerprintMismatchException(String message) {
        super(message);
    }

    /** {@link Verdict#REJECT}. */
    @Override
    public Verdict verdict() {
        return Verdict.REJECT;
    }

    @Override
    public boolean isRetryable() {
        return false;
    }
}
