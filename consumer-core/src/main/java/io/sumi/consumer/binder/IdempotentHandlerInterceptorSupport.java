package io.sumi.consumer.binder;

import io.sumi.consumer.HandlerDefaults;
import io.sumi.consumer.HandlerDefinition;
import io.sumi.consumer.HandlerMethods;
import io.sumi.consumer.HandlerReply;
import io.sumi.consumer.HandlerResult;
import io.sumi.consumer.IdempotencyContext;
import io.sumi.consumer.IdempotentExecutor;
import io.sumi.consumer.IdempotentExecutor.HandlerBody;
import io.sumi.consumer.IdempotentHandler;
import io.sumi.consumer.InboundMessage;
import io.sumi.consumer.ListenerReturnTypes;
import io.sumi.consumer.NotDoneSignal;
import io.sumi.consumer.messaging.MessageReplyCodec;
import io.sumi.consumer.messaging.SpringMessageInboundMessage;
import java.lang.reflect.Method;
import java.lang.reflect.UndeclaredThrowableException;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.jspecify.annotations.Nullable;
import org.springframework.aop.ProxyMethodInvocation;
import org.springframework.aop.support.AopUtils;
import org.springframework.core.MethodIntrospector;
import org.springframework.core.ResolvableType;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.messaging.Message;
import org.springframework.util.ClassUtils;
import org.springframework.util.ReflectionUtils;

/**
 * The method interceptor every binder runs its {@link IdempotentHandler} methods with; a binder
 * subclasses it and only translates: which methods its container invokes, how to find the inbound
 * message (on the thread, among the arguments) and how its container settles a call.
 *
 * <p>What it does for every binder alike:
 * <ul>
 *   <li>each method's {@link HandlerDefinition}, resolved once ({@link HandlerMethods}) and checked:
 *   the key expression, the return-type rule ({@link ListenerReturnTypes#check}: whether the
 *   container waits for a returned future), then the binder's own rules
 *   ({@link #checkDefinition});</li>
 *   <li>which message a call guards: the delivery on the thread belongs to the listener method the
 *   container invokes, and only when it is not nested in another guarded call; any other annotated
 *   method is guarded with the message of its own arguments (a native message first, then a
 *   messaging {@code Message<?>}, {@link #messageArgument}), or refused
 *   ({@link #calledWithoutMessage});</li>
 *   <li>the call itself ({@link #execute}, {@link #executeReplying}, {@link #executeAsync}) with
 *   the binder's {@link Settlement}: the "not done" check after the listener returned, the
 *   container's settlement once the executor returned, and the refusal mapping (whether the
 *   executor refused the message before the listener ran, which a queue binder settles as the
 *   delivery's own);</li>
 *   <li>{@link #proceed} and {@link #proceedClone} (a batch run through a clone of the invocation,
 *   so that a transactional batch can re-run a prefix through the advice after Sumi's).</li>
 * </ul>
 *
 * <p>Thread-safe: the definitions are kept in a concurrent map; everything about one call lives on
 * the calling thread (a {@link Settlement} is made per call).
 *
 * @since 0.1.0
 */
public abstract class IdempotentHandlerInterceptorSupport implements MethodInterceptor {

    private final HandlerMethods methods;
    private final String containerName;
    private final boolean containerWaitsForAsyncResults;

    /**
     * @param executor looked up on first use, so that creating the advisor (which the auto-proxy
     *     creator does early) does not create the ledger's DataSource early
     * @param defaults looked up on first use, so that the configuration properties are not bound early
     * @param containerName how the binder's listener container is named in start-up errors, e.g.
     *     {@code "a JMS listener container"}
     * @param containerWaitsForAsyncResults whether the container waits for a returned
     *     {@code CompletableFuture} / {@code Mono} before it settles the message (and redelivers it
     *     when the future fails); when it does not, such methods are refused at start-up
     *     ({@link ListenerReturnTypes#check})
     */
    protected IdempotentHandlerInterceptorSupport(
            Supplier<IdempotentExecutor> executor,
            Supplier<HandlerDefaults> defaults,
            String containerName,
            boolean containerWaitsForAsyncResults) {
        this.methods = new HandlerMethods(executor, defaults);
        this.containerName = Objects.requireNonNull(containerName, "containerName");
        this.containerWaitsForAsyncResults = containerWaitsForAsyncResults;
    }

    /** The executor (looked up on the first call). */
    protected final IdempotentExecutor executor() {
        return methods.executor();
    }

    @Override
    public final @Nullable Object invoke(MethodInvocation invocation) throws Throwable {
        Method method = invocation.getMethod();
        Object target = invocation.getThis();
        Class<?> targetClass = target != null ? AopUtils.getTargetClass(target) : method.getDeclaringClass();
        HandlerDefinition definition = definition(method, targetClass);
        // The delivery on the thread belongs to the listener method the container invokes, not to
        // another annotated method that listener calls: that one is guarded with the message of its
        // own arguments (a batch listener calling handle(record) per record, a listener fanning out
        // to sub-messages). A nested guarded call is never the listener's.
        boolean listenerInvocation = invokedByContainer(method, targetClass)
                && IdempotencyContext.find().isEmpty();
        return guard(invocation, definition, listenerInvocation);
    }

    /**
     * Runs one call of a guarded method: finds its message (the container's delivery on the thread
     * when {@code listenerInvocation}, else its arguments' {@link #messageArgument}) and runs it
     * through {@link #execute} (or {@link #executeReplying}, {@link #executeAsync}, a batch) with
     * the binder's settlement.
     *
     * @param listenerInvocation whether the container invoked the method itself, outside any other
     *     guarded call: only then is the delivery on the thread the method's message
     */
    protected abstract @Nullable Object guard(
            MethodInvocation invocation, HandlerDefinition definition, boolean listenerInvocation) throws Exception;

    /**
     * Whether the listener container invokes {@code method} itself (its listener annotation, or a
     * class-level listener's handler method).
     */
    protected abstract boolean invokedByContainer(Method method, Class<?> targetClass);

    /** The id of {@code method}'s listener annotation (the consumer name's default), or {@code null}. */
    protected abstract @Nullable String listenerId(Method method, Class<?> targetClass);

    /**
     * Whether {@code method} shows that it runs as a batch listener: its listener annotation asks
     * for batches, or it takes the batch's messages (a service method a batch listener calls). The
     * return-type rule refuses an asynchronous one ({@link ListenerReturnTypes#check}); a batch
     * container that the method does not show (a batch factory) is checked by the binder when it
     * sees the container. By default {@code false}.
     */
    protected boolean runsAsBatch(Method method) {
        return false;
    }

    /** How the binder's listener container is named in start-up errors. */
    protected final String containerName() {
        return containerName;
    }

    /**
     * The binder's own rules for a method's definition (e.g. whether it can keep replies), checked
     * after the return-type rule, once per method.
     *
     * @throws IllegalStateException if the binder cannot run the method as defined
     */
    protected void checkDefinition(Method method, HandlerDefinition definition) {}

    /**
     * The definition of an annotated method: its annotation, completed by the defaults, with the
     * consumer name defaulting to the listener's id ({@link #listenerId}), else {@code Class.method}.
     * Parses the lease and key expression and checks the return type, so calling it at start-up
     * reports a bad annotation early.
     *
     * @throws IllegalArgumentException if the annotation has an invalid lease or key expression
     * @throws IllegalStateException if the binder cannot run the method (its return type, kept replies)
     */
    public final HandlerDefinition definition(Method method, Class<?> targetClass) {
        return methods.definition(method, targetClass, m -> listenerId(m, targetClass), (m, definition) -> {
            ListenerReturnTypes.check(
                    m, containerWaitsForAsyncResults, containerName, definition.storeReply(), runsAsBatch(m));
            checkDefinition(m, definition);
        });
    }

    /**
     * The message of a call's arguments: the first argument that is the binder's own message
     * ({@link #nativeMessage}), else the first messaging {@code Message<?>} the binder takes
     * ({@link #springMessage}); {@code null} if there is none.
     */
    protected final @Nullable InboundMessage messageArgument(Object[] args) {
        for (Object arg : args) {
            InboundMessage message = nativeMessage(arg);
            if (message != null) {
                return message;
            }
        }
        for (Object arg : args) {
            if (arg instanceof Message<?> message) {
                InboundMessage inbound = springMessage(message);
                if (inbound != null) {
                    return inbound;
                }
            }
        }
        return null;
    }

    /** {@code arg} as an inbound message if it is the binder's own message type (a record, an AMQP or JMS message), else {@code null}. */
    protected abstract @Nullable InboundMessage nativeMessage(Object arg);

    /**
     * A messaging {@code Message<?>} argument as an inbound message, or {@code null} to pass it
     * over. By default every one but a batch ({@code Message<List<?>>}, which the binder's batch
     * path handles).
     */
    protected @Nullable InboundMessage springMessage(Message<?> message) {
        return message.getPayload() instanceof List<?> ? null : new SpringMessageInboundMessage(message);
    }

    /**
     * The error for a call in which no message was found.
     *
     * @param listenerAdvice what to do when the container invoked the method (Sumi's capture of the
     *     delivery is missing from its container)
     * @param serviceAdvice what to do when another method called it (it must take its message as an argument)
     */
    protected static IllegalStateException calledWithoutMessage(
            Method method, boolean listenerInvocation, String listenerAdvice, String serviceAdvice) {
        return new IllegalStateException("@IdempotentHandler method " + ClassUtils.getQualifiedMethodName(method)
                + " was called without a message: " + (listenerInvocation ? listenerAdvice : serviceAdvice));
    }

    /** Whether {@code method} has a parameter of one of {@code types} (or a subtype), for start-up checks. */
    protected static boolean hasParameterOf(Method method, Class<?>... types) {
        for (Class<?> parameter : method.getParameterTypes()) {
            for (Class<?> type : types) {
                if (type.isAssignableFrom(parameter)) {
                    return true;
                }
            }
        }
        return false;
    }

    /**
     * The {@link IdempotentHandler} methods of {@code bean}'s class (its target class when it is a
     * proxy), for a binder's start-up checks that see a listener's bean but not its method (a
     * class-level listener).
     */
    public static Set<Method> annotatedMethods(Object bean) {
        return MethodIntrospector.selectMethods(AopUtils.getTargetClass(bean), (ReflectionUtils.MethodFilter)
                method -> AnnotatedElementUtils.hasAnnotation(method, IdempotentHandler.class));
    }

    /**
     * Whether {@code method} has a {@code List} (or other collection) parameter whose elements are
     * {@code element} (or a subtype): a batch of the binder's messages, for start-up checks.
     */
    protected static boolean hasListParameterOf(Method method, Class<?> element) {
        for (int i = 0; i < method.getParameterCount(); i++) {
            ResolvableType type = ResolvableType.forMethodParameter(method, i);
            Class<?> elementType = type.asCollection().getGeneric(0).resolve();
            if (Collection.class.isAssignableFrom(type.toClass())
                    && elementType != null
                    && element.isAssignableFrom(elementType)) {
                return true;
            }
        }
        return false;
    }

    /**
     * How a binder passes one call's end on to its container. A binder makes one per call (it may
     * hold the call's delivery or acknowledgement); every method has a no-op default
     * ({@link #NONE}: the container settles from the method's return or exception alone). Public
     * so that a binder that runs its handlers without this interceptor (Spring Cloud Stream's
     * function wrappers) settles by the same contract.
     */
    public interface Settlement {

        /** Passes nothing on: the container settles from the call's return or exception. */
        Settlement NONE = new Settlement() {};

        /**
         * The listener returned {@code value} (still inside the executor's claim): the value, or
         * {@link NotDoneSignal} if the listener said its message is not done (a nack).
         */
        default @Nullable Object returned(@Nullable Object value) throws NotDoneSignal {
            return value;
        }

        /**
         * The reply the executor keeps for a listener that returned {@code value}: by default
         * encoded, then {@link #returned checked}, so that a not-done signal carries the reply.
         */
        default HandlerReply reply(MessageReplyCodec codec, @Nullable Object value) throws NotDoneSignal {
            HandlerReply reply = codec.encode(value);
            returned(reply);
            return reply;
        }

        /** The executor returned {@code result} (processed, duplicate or not done). */
        default void settled(HandlerResult<?> result) {}

        /**
         * The executor's call ended with {@code failure}, which is thrown to the container next.
         *
         * @param ran whether the listener method ran; when it did not, a refusal of Sumi's in
         *     {@code failure} ({@link io.sumi.consumer.exception.Verdict}) refused the message at entry
         */
        default void failed(Throwable failure, boolean ran) {}
    }

    /** One call of the executor with the body the interceptor made, e.g. {@code body -> executor().execute(definition, message, body)}. */
    @FunctionalInterface
    protected interface Execution {
        HandlerResult<@Nullable Object> execute(HandlerBody<@Nullable Object> body) throws Exception;
    }

    /** Runs the method for {@code message} through {@link IdempotentExecutor#execute}, settled by {@code settlement}. */
    protected final @Nullable Object execute(
            MethodInvocation invocation, HandlerDefinition definition, InboundMessage message, Settlement settlement)
            throws Exception {
        return execute(invocation, settlement, body -> executor().execute(definition, message, body));
    }

    /**
     * Runs the method through {@code execution} (the executor, or a poll's claims), settled by
     * {@code settlement}: {@link Settlement#returned} after the listener returned,
     * {@link Settlement#settled} after the executor returned, {@link Settlement#failed} (with
     * whether the listener ran) before a failure is thrown.
     *
     * @return the listener's value, or the executor's for a duplicate
     */
    protected final @Nullable Object execute(MethodInvocation invocation, Settlement settlement, Execution execution)
            throws Exception {
        boolean[] ran = {false};
        HandlerResult<@Nullable Object> result;
        try {
            result = execution.execute(() -> {
                ran[0] = true;
                return settlement.returned(proceed(invocation));
            });
        } catch (Exception | Error ex) {
            settlement.failed(ex, ran[0]);
            throw ex;
        }
        settlement.settled(result);
        return result.value();
    }

    /**
     * Runs a listener that keeps its replies: its return value is kept with the ledger row
     * ({@link MessageReplyCodec}, {@link Settlement#reply}), and a duplicate returns the kept reply
     * as the method's result, which the binder's listener adapter sends as any reply, to the new
     * request's reply address with its correlation id. A duplicate whose row has no reply returns
     * {@code null}: nothing is sent, as without {@code storeReply}.
     */
    protected final @Nullable Object executeReplying(
            MethodInvocation invocation,
            HandlerDefinition definition,
            InboundMessage message,
            MessageReplyCodec codec,
            Settlement settlement)
            throws Exception {
        boolean[] ran = {false};
        HandlerResult<HandlerReply> result;
        try {
            result = executor().executeReplying(definition, message, () -> {
                ran[0] = true;
                return settlement.reply(codec, proceed(invocation));
            });
        } catch (Exception | Error ex) {
            settlement.failed(ex, ran[0]);
            throw ex;
        }
        settlement.settled(result);
        return codec.listenerResult(result, invocation.getMethod());
    }

    /**
     * Runs a method returning a {@code CompletableFuture} or {@code Mono}: its row follows the
     * future ({@link IdempotentExecutor#executeAsync}), and the container gets a future of the same
     * type that completes only after the row is completed (or released), then after
     * {@code settlement} saw the end ({@link Settlement#settled} or {@link Settlement#failed}). The
     * listener's value is not passed to {@link Settlement#returned}: what it says comes with the future.
     */
    protected final Object executeAsync(
            MethodInvocation invocation, HandlerDefinition definition, InboundMessage message, Settlement settlement)
            throws Exception {
        ListenerReturnTypes.Kind kind = ListenerReturnTypes.of(invocation.getMethod());
        boolean[] ran = {false};
        CompletableFuture<HandlerResult<@Nullable Object>> result = executor().executeAsync(definition, message, () -> {
            ran[0] = true;
            return ListenerReturnTypes.toFuture(proceed(invocation));
        });
        if (settlement != Settlement.NONE) {
            result = result.whenComplete((settled, failure) -> {
                if (failure != null) {
                    settlement.failed(failure, ran[0]);
                } else {
                    settlement.settled(settled);
                }
            });
        }
        return ListenerReturnTypes.toResult(kind, result.thenApply(HandlerResult::value));
    }

    /**
     * Calls the method through a clone of the invocation, with {@code args}: a clone can be run
     * again (a transactional batch re-runs a prefix) and still passes the advice after Sumi's.
     *
     * @throws IllegalStateException if the invocation is not a Spring AOP proxy's
     */
    protected static void proceedClone(MethodInvocation invocation, Object[] args) throws Exception {
        if (!(invocation instanceof ProxyMethodInvocation proxyInvocation)) {
            throw new IllegalStateException(
                    "@IdempotentHandler batch methods must be called through a Spring AOP proxy");
        }
        proceed(proxyInvocation.invocableClone(args));
    }

    /**
     * Calls the method (the next advice, then the method itself); a checked {@code Throwable} that
     * is no {@code Exception} is wrapped in an {@link UndeclaredThrowableException}.
     */
    protected static @Nullable Object proceed(MethodInvocation invocation) throws Exception {
        try {
            return invocation.proceed();
        } catch (Exception | Error ex) {
            throw ex;
        } catch (Throwable ex) {
            throw new UndeclaredThrowableException(ex);
        }
    }
}
