package io.sumi.consumer;

import org.jspecify.annotations.Nullable;

/**
 * The thread-local holder behind {@link IdempotencyContext#current()}. Not API: only the executor
 * makes a context current, so a handler cannot forge one; handlers read it through
 * {@link IdempotencyContext#current()} and {@link IdempotencyContext#find()}.
 *
 * <p>Public only because {@code IdempotencyContext} sits in another package of this module.
 */
final class CurrentIdempotencyContext {

    private static final ThreadLocal<@Nullable IdempotencyContext> CURRENT = new ThreadLocal<>();

    private CurrentIdempotencyContext() {}

    /** The context of the handler running on this thread, or {@code null} outside a handler. */
    public static @Nullable IdempotencyContext get() {
        return CURRENT.get();
    }

    /**
     * Makes {@code context} current on this thread until the returned scope is closed, which
     * restores the one before (so a handler that runs another idempotent handler gets its own
     * context back afterwards).
     */
    public static Scope open(IdempotencyContext context) {
        IdempotencyContext previous = CURRENT.get();
        CURRENT.set(context);
        return () -> {
            if (previous == null) {
                CURRENT.remove();
            } else {
                CURRENT.set(previous);
            }
        };
    }

    /** Closes a context opened with {@link #open(IdempotencyContext)}; never throws. */
    @FunctionalInterface
    public interface Scope extends AutoCloseable {
        @Override
        void close();
    }
}
