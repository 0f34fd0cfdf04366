package io.sumi.consumer;

/**
 * Makes an {@link IdempotencyContext} current, as the executor does around a handler, for tests in
 * other packages than the executor's (the holder of the current context is package-private).
 */
public final class TestIdempotencyContexts {

    private TestIdempotencyContexts() {}

    /** The context made current until the scope closes. */
    public interface Scope extends AutoCloseable {
        @Override
        void close();
    }

    public static Scope open(IdempotencyContext context) {
        CurrentIdempotencyContext.Scope scope = CurrentIdempotencyContext.open(context);
        return scope::close;
    }
}
