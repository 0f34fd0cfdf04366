package io.sumi.consumer;

import java.util.Optional;

/**
 * The message an idempotent handler is running for, on the handler's thread: its key (pass it
 * downstream as the provider's idempotency key), ledger namespace and attempt.
 *
 * <p>Set by the executor for the duration of a record handler call and cleared afterwards; for a
 * batch handler, {@link #current()} is not set (each record's key is its header or expression).
 * Only the executor makes a context current: constructing one (for a test's expected value, say)
 * does not make it visible to {@link #current()}.
 *
 * @param key the message's idempotency key
 * @param consumer the ledger namespace
 * @param attempt 1 for the first run of this key, 2 after one failure or lease takeover, and so on
 * @param mode the mode the message runs in ({@code TRANSACTIONAL} or {@code LEASE}, never {@code AUTO})
 */
public record IdempotencyContext(String key, String consumer, int attempt, IdempotencyMode mode) {

    /**
     * The context of the handler running on this thread.
     *
     * @throws IllegalStateException outside an idempotent handler
     */
    public static IdempotencyContext current() {
        IdempotencyContext context = CurrentIdempotencyContext.get();
        if (context == null) {
            throw new IllegalStateException("No idempotent handler is running on this thread"
                    + " (IdempotencyContext is set only inside an @IdempotentHandler record listener)");
        }
        return context;
    }

    /** The context of the handler running on this thread, if any. */
    public static Optional<IdempotencyContext> find() {
        return Optional.ofNullable(CurrentIdempotencyContext.get());
    }
}
