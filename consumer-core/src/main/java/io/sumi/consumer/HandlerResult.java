package io.sumi.consumer;

import org.jspecify.annotations.Nullable;

/**
 * The result of {@link IdempotentExecutor#execute}.
 *
 * @param outcome whether the handler ran
 * @param value what the handler returned ({@code null} for a duplicate)
 */
public record HandlerResult<T>(
        MessageOutcome outcome, @Nullable T value) {

    /** The result for a message that was already completed. */
    public static <T> HandlerResult<T> duplicate() {
        return new HandlerResult<>(MessageOutcome.DUPLICATE, null);
    }
}
