package io.sumi.consumer.exception;

/**
 * The message carries no key: no key header and no (or an empty) key expression result. Not
 * retryable: the message goes to the error handler and so to the dead-letter destination.
 */
public class MissingIdempotencyKeyException extends IdempotencyException {

    public MissingIdempotencyKeyException(String message) {
        super(message);
    }

    public MissingIdempotencyKeyException(String message, Throwable cause) {
        super(message, cause);
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
