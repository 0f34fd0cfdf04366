package io.sumi.consumer.binder;

import java.lang.reflect.Method;

/**
 * One listener technology's claim on {@code @IdempotentHandler} methods. A binder jar registers
 * its implementation in {@code META-INF/services/io.sumi.consumer.binder.ListenerBinder}; the core
 * ({@link ListenerBinders}) asks every registered binder, so that each annotated method is guarded
 * by exactly one binder and an application with several binders claims each message once.
 *
 * <p>Implementations are stateless, have a public no-argument constructor and may refer to their
 * framework's classes: a binder whose framework is not on the class path is left out when the
 * binders are loaded.
 *
 * @since 0.1.0
 */
public interface ListenerBinder {

    /** A short name for messages, e.g. {@code "kafka"}, {@code "rabbit"}, {@code "jms"}. */
    String name();

    /**
     * Whether {@code method} (an {@code @IdempotentHandler} method found on {@code targetClass}) is
     * this binder's: it carries a listener annotation of this binder's framework, or takes a
     * parameter of one of its message types.
     */
    boolean guards(Method method, Class<?> targetClass);

    /**
     * Whether this binder also takes the annotated methods that no registered binder
     * {@linkplain #guards guards}: service methods that a listener calls with a framework-neutral
     * message (a messaging {@code Message<?>}, a list). At most one registered binder may; the
     * Spring Kafka binder does.
     */
    default boolean takesUnclaimedMethods() {
        return false;
    }
}
