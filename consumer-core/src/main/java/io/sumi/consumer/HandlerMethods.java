package io.sumi.consumer;

import java.lang.reflect.Method;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiConsumer;
import java.util.function.Function;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * What a listener binder's method interceptor keeps about the {@link IdempotentHandler} methods it
 * guards (Kafka, RabbitMQ and JMS alike): the executor, looked up on first use, so that creating
 * the advisor (which the auto-proxy creator does early) creates neither the ledger's DataSource
 * nor the configuration properties early; and each method's {@link HandlerDefinition}, resolved
 * once with {@link HandlerDefaults#resolve(Method, Class, String)} and its key expression parsed.
 * Thread-safe.
 *
 * @since 0.1.0
 */
public final class HandlerMethods {

    private final Supplier<IdempotentExecutor> executorSupplier;
    private final Supplier<HandlerDefaults> defaults;
    private final Map<Method, HandlerDefinition> definitions = new ConcurrentHashMap<>();
    private volatile @Nullable IdempotentExecutor executor;

    public HandlerMethods(Supplier<IdempotentExecutor> executor, Supplier<HandlerDefaults> defaults) {
        this.executorSupplier = Objects.requireNonNull(executor, "executor");
        this.defaults = Objects.requireNonNull(defaults, "defaults");
    }

    /** The executor (looked up on the first call). */
    public IdempotentExecutor executor() {
        IdempotentExecutor current = executor;
        if (current == null) {
            current = executorSupplier.get();
            executor = current;
        }
        return current;
    }

    /**
     * The definition of the annotated {@code method}, resolved on the first call.
     *
     * @param listenerId the id of the method's listener annotation, or {@code null} (the consumer name's default)
     * @throws IllegalArgumentException if the annotation has an invalid lease or key expression
     */
    public HandlerDefinition definition(
            Method method, Class<?> targetClass, Function<Method, @Nullable String> listenerId) {
        return definition(method, targetClass, listenerId, (m, definition) -> {});
    }

    /**
     * The definition of the annotated {@code method}, resolved on the first call and checked by
     * {@code check} (a binder's own rules, e.g. on kept replies) before it is kept.
     *
     * @param listenerId the id of the method's listener annotation, or {@code null} (the consumer name's default)
     * @param check throws if the binder cannot run the method as defined
     * @throws IllegalArgumentException if the annotation has an invalid lease or key expression
     */
    public HandlerDefinition definition(
            Method method,
            Class<?> targetClass,
            Function<Method, @Nullable String> listenerId,
            BiConsumer<Method, HandlerDefinition> check) {
        return definitions.computeIfAbsent(method, m -> {
            HandlerDefinition definition = defaults.get().resolve(m, targetClass, listenerId.apply(m));
            executor().keyResolver().validate(definition);
            check.accept(m, definition);
            return definition;
        });
    }
}
