package io.sumi.consumer.exception;

/**
 * Base class of the exceptions Sumi raises about a message (never about the handler's own work,
 * whose exceptions propagate unchanged).
 */
public abstract class IdempotencyException extends RuntimeException {

    protected IdempotencyException(String message) {
        super(message);
    }

    protected IdempotencyException(String message, Throwable cause) {
        super(message, cause);
    }

    /**
     * Whether delivering the message again can succeed. Error handlers should not retry a
     * message whose exception says {@code false}, but dead-letter it at once.
     */
    public abstract boolean isRetryable();
}
