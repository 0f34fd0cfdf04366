package io.sumi.stream.internal;

import java.util.function.Consumer;

/**
 * An {@code @IdempotentHandler} {@link Consumer} bean, wrapped: each message runs the original
 * consumer once. Spring Cloud Function takes the input type from the bean's definition (its
 * {@code @Bean} method), not from this class, so it converts payloads as for the original.
 */
public final class IdempotentConsumer implements Consumer<Object> {

    private final Consumer<Object> delegate;
    private final IdempotentInvoker invoker;

    @SuppressWarnings("unchecked")
    public IdempotentConsumer(Consumer<?> delegate, IdempotentInvoker invoker) {
        this.delegate = (Consumer<Object>) delegate;
        this.invoker = invoker;
    }

    @Override
    public void accept(Object input) {
        invoker.invoke(input, value -> {
            delegate.accept(value);
            return null;
        });
    }

    /** The consumer this one wraps. */
    public Consumer<?> delegate() {
        return delegate;
    }

    @Override
    public String toString() {
        return "IdempotentConsumer[" + invoker.definition().consumer() + "]";
    }
}
