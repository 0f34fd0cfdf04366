package io.sumi.consumer.exception;

/**
 * The message's key cannot be stored exactly: longer than the ledger's column, empty, header
 * bytes that are not valid UTF-8, or characters no ledger can store (NUL, unpaired surrogates).
 * Keys are rejected, never truncated or re-encoded, so two different keys cannot collide. Not
 * retryable: the record goes to the error handler's recoverer (the DLT).
 */
public class InvalidIdempotencyKeyException extends IdempotencyException {

    public InvalidIdempotencyKeyException(String message) {
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
