package io.sumi.stream.internal;

import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * An {@code @IdempotentHandler} {@link Function} bean, wrapped: each message runs the original
 * function once; a duplicate returns {@code null}, so Spring Cloud Stream sends no output for it,
 * or, when the function keeps its replies ({@code storeReply}), the output kept for its key.
 * Spring Cloud Function takes the types from the bean's definition, not from this class.
 */
public final class IdempotentFunction implements Function<Object, @Nullable Object> {

    private final Function<Object, @Nullable Object> delegate;
    private final IdempotentInvoker invoker;

    @SuppressWarnings("unchecked")
    public IdempotentFunction(Function<?, ?> delegate, IdempotentInvoker invoker) {
        this.delegate = (Function<Object, @Nullable Object>) delegate;
        this.invoker = invoker;
    }

    @Override
    public @Nullable Object apply(Object input) {
        return invoker.invoke(input, delegate);
    }

    /** The function this one wraps. */
    public Function<?, ?> delegate() {
        return delegate;
    }

    @Override
    public String toString() {
        return "IdempotentFunction[" + invoker.definition().consumer() + "]";
    }
}
