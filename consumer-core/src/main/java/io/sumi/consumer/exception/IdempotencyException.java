package io.sumi.consumer.exception;

import org.jspecify.annotations.Nullable;

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

    /**
     * What a binder does with the message this exception refused ({@link Verdict#of}), or {@code
     * null} if the exception is not a refusal of the message (a listener that is stopping, say).
     * Each refusal says it here itself, so that an exception defined in another module (sumi-budgets'
     * {@code BudgetExhaustedException}, {@link Verdict#BUDGET}) is classified without the core
     * knowing its type. This default: {@code null}.
     *
     * @since 0.1.0
     */
    public @Nullable Verdict verdict() {
        return null;
    }
}
