package io.sumi.consumer;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Future;
import org.jspecify.annotations.Nullable;

/**
 * The one rule of what "the work is done" means for a listener method's return type, shared by
 * every binder: a method returning a value (or nothing) is done when it returns; one returning a
 * {@link CompletionStage} ({@code CompletableFuture}) or a Reactor {@code Mono} is done when that
 * completes, so its ledger row follows the future ({@link IdempotentExecutor#executeAsync}):
 * completed when the future succeeds, released when it fails. Any other asynchronous type (a
 * {@code Flux} or other multi-value {@code Publisher}, a plain {@link Future}, a subclass of
 * {@code CompletableFuture} or {@code Mono}) is refused, since Sumi cannot follow its completion
 * and the row would be completed before the work ended.
 *
 * <p>Reactor is optional: a {@code Mono} is recognised by its class name and converted by
 * reflection, so this class needs no Reactor on the class path.
 *
 * <p>A binder calls {@link #check} for each annotated method at start-up, and for each listener
 * container it sees, with whether its listener container waits for an asynchronous result before
 * acknowledging the message (Spring Kafka and Spring AMQP do for record listeners; a JMS container
 * or a Spring Cloud Stream reactive function does not), whether the method keeps its replies and
 * whether it runs as a batch listener (both of which asynchronous methods cannot). Thread-safe;
 * stateless.
 *
 * @since 0.1.0
 */
public final class ListenerReturnTypes {

    /** How a listener method's result ends its work. */
    public enum Kind {
        /** A value or nothing: done when the method returns. */
        SYNCHRONOUS,
        /** A {@code CompletableFuture} or {@code CompletionStage}: done when it completes. */
        COMPLETION_STAGE,
        /** A Reactor {@code Mono}: done when it completes (it is subscribed to at once). */
        MONO,
        /** Asynchronous in a way Sumi cannot follow: refused at start-up. */
        REFUSED;

        /** Whether the work ends after the method returns ({@link #COMPLETION_STAGE} or {@link #MONO}). */
        public boolean isAsync() {
            return this == COMPLETION_STAGE || this == MONO;
        }
    }

    static final String MONO = "reactor.core.publisher.Mono";
    private static final String PUBLISHER = "org.reactivestreams.Publisher";
    private static final String FLOW_PUBLISHER = "java.util.concurrent.Flow$Publisher";

    private ListenerReturnTypes() {}

    /** The kind of {@code method}'s declared return type. */
    public static Kind of(Method method) {
        return of(method.getReturnType());
    }

    /** The kind of a declared return type. */
    public static Kind of(Class<?> type) {
        if (CompletionStage.class.isAssignableFrom(type)) {
            // The executor returns a plain CompletableFuture: a narrower declared type could not hold it.
            return type.isAssignableFrom(CompletableFuture.class) ? Kind.COMPLETION_STAGE : Kind.REFUSED;
        }
        if (type.getName().equals(MONO)) {
            return Kind.MONO;
        }
        if (Future.class.isAssignableFrom(type) || isNamed(type, PUBLISHER) || isNamed(type, FLOW_PUBLISHER)) {
            return Kind.REFUSED;
        }
        return Kind.SYNCHRONOUS;
    }

    /**
     * Checks at start-up that a binder can run {@code method} as its return type requires: the one
     * return-type rule every binder applies, to each annotated method (from its annotations and
     * parameters) and to each listener container Sumi sees (from the container's shape, which a
     * method does not show: a batch container factory).
     *
     * @param containerWaits whether the listener container waits for a returned future's
     *     completion before it acknowledges the message (and redelivers it when it fails)
     * @param binder how the container is named in the message, e.g. {@code "a JMS listener container"}
     *     or {@code "Kafka listener container 'orders'"}
     * @param storeReply whether the method keeps its replies ({@link IdempotentHandler#storeReply()})
     * @param batch whether the method is run as a batch listener (a batch container, or a method
     *     taking the batch's messages): a batch's rows complete when the method returns, so an
     *     asynchronous batch method is refused
     * @throws IllegalStateException if the return type is refused, is asynchronous where the container
     *     does not wait, on a batch method or on a method that keeps its replies; the message says why
     */
    public static void check(Method method, boolean containerWaits, String binder, boolean storeReply, boolean batch) {
        Kind kind = of(method);
        String name = method.getDeclaringClass().getName() + "." + method.getName();
        String type = method.getReturnType().getName();
        if (kind == Kind.REFUSED) {
            throw new IllegalStateException("@IdempotentHandler method " + name + " returns " + type
                    + ", whose completion Sumi cannot follow: its ledger row would be completed when the method"
                    + " returns, before the work ends, and a failure afterwards would never be retried. Return a value,"
                    + " CompletableFuture<?> or Mono<?> (see docs/consumer-semantics.md, \"Asynchronous handlers\")");
        }
        if (kind.isAsync() && batch) {
            throw new IllegalStateException("@IdempotentHandler method " + name + " returns " + type
                    + " and runs as a batch listener (" + binder + "): Sumi completes a batch's rows when the method"
                    + " returns, and no container waits for a batch's future, so its messages would be refused when"
                    + " a batch is delivered (retried, then dead-lettered, or left unacknowledged). Return void and"
                    + " wait for the work inside the method, or make it a record listener (see"
                    + " docs/consumer-semantics.md, \"Asynchronous handlers\")");
        }
        if (kind.isAsync() && !containerWaits) {
            throw new IllegalStateException("@IdempotentHandler method " + name + " returns " + type + ", but "
                    + binder + " acknowledges the message when the method returns, before the future completes:"
                    + " a failure of the future would lose the message. Return a value (wait for the work inside the"
                    + " method) (see docs/consumer-semantics.md, \"Asynchronous handlers\")");
        }
        if (kind.isAsync() && storeReply) {
            throw new IllegalStateException("@IdempotentHandler method " + name + " returns " + type
                    + " and keeps its replies (storeReply): a kept reply is written with the completing statement,"
                    + " which needs the reply itself, not a future of it. Return the reply, or drop storeReply"
                    + " (see docs/consumer-semantics.md, \"Asynchronous handlers\")");
        }
    }

    /**
     * The same rule for a batch being delivered to {@code method}: a last guard, before anything of
     * the batch is claimed, for a batch listener that start-up did not see (a container created
     * after start-up); start-up refuses the others ({@link #check}).
     *
     * @param binder how the container is named in the message
     * @throws IllegalStateException if {@code method} returns a future or a {@code Mono}
     */
    public static void checkBatch(Method method, String binder) {
        check(method, true, binder, false, true);
    }

    /**
     * The future of an asynchronous result: {@code value} itself for a {@code CompletableFuture},
     * its {@code toCompletableFuture()} for another stage, {@code Mono.toFuture()} (which subscribes)
     * for a {@code Mono}; a {@code null} result is a future completed with {@code null}.
     *
     * @throws IllegalArgumentException if {@code value} is neither
     */
    public static CompletableFuture<@Nullable Object> toFuture(@Nullable Object value) {
        if (value == null) {
            return CompletableFuture.completedFuture(null);
        }
        if (value instanceof CompletionStage<?> stage) {
            @SuppressWarnings("unchecked")
            CompletableFuture<@Nullable Object> future =
                    (CompletableFuture<@Nullable Object>) stage.toCompletableFuture();
            return future;
        }
        if (isNamed(value.getClass(), MONO)) {
            Object future = invoke(value, "toFuture");
            if (future instanceof CompletableFuture<?> f) {
                @SuppressWarnings("unchecked")
                CompletableFuture<@Nullable Object> typed = (CompletableFuture<@Nullable Object>) f;
                return typed;
            }
        }
        throw new IllegalArgumentException(
                "Not an asynchronous result: " + value.getClass().getName());
    }

    /**
     * What a guarded method of {@code kind} returns to its container for {@code future}: the
     * future itself, or {@code Mono.fromFuture(future)} for a {@code Mono} method.
     *
     * @throws IllegalArgumentException if {@code kind} is not asynchronous
     */
    public static Object toResult(Kind kind, CompletableFuture<?> future) {
        Objects.requireNonNull(future, "future");
        return switch (kind) {
            case COMPLETION_STAGE -> future;
            case MONO -> monoFromFuture(future);
            default -> throw new IllegalArgumentException("Not an asynchronous kind: " + kind);
        };
    }

    private static Object monoFromFuture(CompletableFuture<?> future) {
        try {
            Class<?> mono = Class.forName(MONO, false, ListenerReturnTypes.class.getClassLoader());
            return Objects.requireNonNull(
                    mono.getMethod("fromFuture", CompletableFuture.class).invoke(null, future));
        } catch (ClassNotFoundException | NoSuchMethodException | IllegalAccessException ex) {
            throw new IllegalStateException("Reactor's Mono.fromFuture is not usable", ex);
        } catch (InvocationTargetException ex) {
            throw new IllegalStateException("Mono.fromFuture failed", ex.getCause());
        }
    }

    private static @Nullable Object invoke(Object target, String method) {
        try {
            return target.getClass().getMethod(method).invoke(target);
        } catch (NoSuchMethodException | IllegalAccessException ex) {
            throw new IllegalStateException("Reactor's Mono." + method + " is not usable", ex);
        } catch (InvocationTargetException ex) {
            throw new IllegalStateException("Mono." + method + " failed", ex.getCause());
        }
    }

    /** Whether {@code type} is, extends or implements the class or interface named {@code name}. */
    private static boolean isNamed(@Nullable Class<?> type, String name) {
        if (type == null) {
            return false;
        }
        if (type.getName().equals(name)) {
            return true;
        }
        for (Class<?> in : type.getInterfaces()) {
            if (isNamed(in, name)) {
                return true;
            }
        }
        return isNamed(type.getSuperclass(), name);
    }
}
