package io.sumi.consumer;

/**
 * The message's key cannot be stored: longer than the ledger's column (keys are rejected, never
 * truncated, so two long keys cannot collide). Not retryable.
 */
public class InvalidIdempotencyKeyException extends IdempotencyException {

    public InvalidIdempotencyKeyException(String message) {
        super(message);
    }

    @Override
    public boolean isRetryable() {
        return false;
    }
}
