package io.sumi.rabbit;

import io.sumi.consumer.HandlerDefaults;
import io.sumi.consumer.HandlerDefinition;
import io.sumi.consumer.HandlerMethods;
import io.sumi.consumer.HandlerReply;
import io.sumi.consumer.HandlerResult;
import io.sumi.consumer.IdempotencyContext;
import io.sumi.consumer.IdempotentExecutor;
import io.sumi.consumer.IdempotentHandler;
import io.sumi.consumer.InboundMessage;
import io.sumi.consumer.ListenerReturnTypes;
import io.sumi.consumer.MessageOutcome;
import io.sumi.consumer.NotDoneSignal;
import io.sumi.consumer.exception.BatchFailedException;
import io.sumi.consumer.exception.Verdict;
import io.sumi.consumer.messaging.MessageReplyCodec;
import io.sumi.consumer.messaging.SpringMessageInboundMessage;
import io.sumi.consumer.messaging.internal.BatchArguments;
import io.sumi.rabbit.internal.CurrentDelivery;
import java.lang.reflect.Method;
import java.lang.reflect.UndeclaredThrowableException;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.jspecify.annotations.Nullable;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.rabbit.annotation.RabbitHandler;
import org.springframework.amqp.rabbit.annotation.RabbitListener;
import org.springframework.amqp.rabbit.annotation.RabbitListeners;
import org.springframework.aop.ProxyMethodInvocation;
import org.springframework.aop.support.AopUtils;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.util.ClassUtils;
import org.springframework.util.function.SingletonSupplier;

/**
 * Runs {@link IdempotentHandler} methods of Spring AMQP listeners through the
 * {@link IdempotentExecutor}.
 *
 * <p>The message is found, in order: for the listener method the container invokes
 * ({@code @RabbitListener} / {@code @RabbitHandler}, not nested in another guarded call), the
 * message or consumer batch the container is delivering on this thread (captured by Sumi's
 * container advice, {@link SumiRabbitContainerAdvice}, so any parameter style works: an AMQP
 * {@link Message}, a messaging {@code Message<?>}, a payload with {@code @Header}s, a payload
 * alone); then, for every method, an AMQP {@link Message} argument, a messaging
 * {@code Message<?>} argument, a {@code List<Message>} argument. A consumer batch
 * ({@code consumerBatchEnabled}) is claimed in one round trip and the method is called once with
 * the messages still to process: every {@code List} argument whose size is the batch's is
 * filtered alike.
 *
 * <p>Failures are left to the container advice, which turns Sumi's exceptions into what RabbitMQ
 * understands (docs/rabbitmq.md). A batch method may throw {@link BatchFailedException} with the
 * index <em>in the list it received</em>: the messages before it are completed; the delivery is
 * rejected and requeued, and on redelivery the completed ones are skipped as duplicates.
 */
public final class IdempotentRabbitHandlerInterceptor implements MethodInterceptor {

    private final HandlerMethods methods;
    private final Supplier<MessageReplyCodec> replyCodec;

    public IdempotentRabbitHandlerInterceptor(IdempotentExecutor executor, HandlerDefaults defaults) {
        this(() -> executor, () -> defaults);
    }

    /**
     * An interceptor that looks its executor and defaults up on first use, so that creating the
     * advisor (which the auto-proxy creator does early) creates neither the ledger's DataSource nor
     * the configuration properties early.
     */
    public IdempotentRabbitHandlerInterceptor(
            Supplier<IdempotentExecutor> executor, Supplier<HandlerDefaults> defaults) {
        this(executor, defaults, RabbitReplies::codec);
    }

    /**
     * An interceptor that looks its executor, defaults and reply codec up on first use.
     *
     * @param replyCodec how listeners that keep their replies ({@code storeReply}) keep them
     * @since 0.1.0
     */
    public IdempotentRabbitHandlerInterceptor(
            Supplier<IdempotentExecutor> executor,
            Supplier<HandlerDefaults> defaults,
            Supplier<MessageReplyCodec> replyCodec) {
        this.methods = new HandlerMethods(executor, defaults);
        this.replyCodec = SingletonSupplier.of(replyCodec);
    }

    private IdempotentExecutor executor() {
        return methods.executor();
    }

    @Override
    public @Nullable Object invoke(MethodInvocation invocation) throws Throwable {
        Object target = invocation.getThis();
        Class<?> targetClass = target != null
                ? AopUtils.getTargetClass(target)
                : invocation.getMethod().getDeclaringClass();
        HandlerDefinition definition = definition(invocation.getMethod(), targetClass);
        Object[] args = invocation.getArguments();

        // The delivery on the thread belongs to the listener method the container invokes, not to
        // another annotated method that listener calls (that one is guarded with its own message).
        boolean listenerInvocation = isListenerMethod(invocation.getMethod(), targetClass)
                && IdempotencyContext.find().isEmpty();
        if (listenerInvocation) {
            List<Message> batch = CurrentDelivery.batch();
            if (batch != null) {
                return invokeBatch(invocation, definition, batch);
            }
            Message current = CurrentDelivery.message();
            if (current != null && definition.storeReply()) {
                return invokeReplying(invocation, definition, new RabbitInboundMessage(current), current);
            }
            if (current != null
                    && ListenerReturnTypes.of(invocation.getMethod()).isAsync()) {
                return invokeAsync(invocation, definition, new RabbitInboundMessage(current));
            }
            if (current != null) {
                boolean[] ran = {false};
                HandlerResult<@Nullable Object> result;
                try {
                    result = executor().execute(definition, new RabbitInboundMessage(current), () -> {
                        ran[0] = true;
                        return notDoneIfNacked(current, proceed(invocation));
                    });
                } catch (RuntimeException ex) {
                    if (!ran[0] && Verdict.find(ex) != null) {
                        CurrentDelivery.refusedAtEntry(ex);
                    }
                    throw ex;
                }
                if (result.outcome() == MessageOutcome.DUPLICATE) {
                    CurrentDelivery.skipped(List.of(current));
                }
                return result.value();
            }
        }
        InboundMessage message = singleMessage(args);
        if (message == null) {
            List<Message> messages = messageListArgument(args);
            if (messages != null) {
                return invokeBatch(invocation, definition, messages);
            }
            throw new IllegalStateException("@IdempotentHandler method "
                    + ClassUtils.getQualifiedMethodName(invocation.getMethod())
                    + " was called without a message: "
                    + (listenerInvocation
                            ? "Sumi's container advice must be on its listener container factory (the starter puts it on"
                                    + " every factory), or give it an org.springframework.amqp.core.Message parameter"
                            : "it is not the @RabbitListener method the container invokes, so its key must come from its own"
                                    + " arguments; give it an org.springframework.amqp.core.Message or List<Message> parameter,"
                                    + " or put @IdempotentHandler on the @RabbitListener method"));
        }
        if (definition.storeReply()) {
            return invokeReplying(invocation, definition, message, null);
        }
        if (ListenerReturnTypes.of(invocation.getMethod()).isAsync()) {
            return invokeAsync(invocation, definition, message);
        }
        return executor()
                .execute(definition, message, () -> proceed(invocation))
                .value();
    }

    /**
     * Runs a method returning a {@code CompletableFuture} or {@code Mono}: its row follows the
     * future ({@link IdempotentExecutor#executeAsync}), and the container gets a future of the same
     * type that completes only after the row is completed (or released). Spring AMQP switches a
     * container with asynchronous listeners to MANUAL acknowledgement and acks the delivery when
     * that future succeeds (nacks it, requeued, when it fails), so the ack always comes after the
     * completion. A duplicate returns a completed future, which the container acks likewise: it is
     * not handed to the container advice as a skipped delivery (that would ack it twice).
     */
    private Object invokeAsync(MethodInvocation invocation, HandlerDefinition definition, InboundMessage message)
            throws Exception {
        return ListenerReturnTypes.toResult(
                ListenerReturnTypes.of(invocation.getMethod()),
                executor()
                        .executeAsync(definition, message, () -> ListenerReturnTypes.toFuture(proceed(invocation)))
                        .thenApply(HandlerResult::value));
    }

    /**
     * Runs a listener that keeps its replies: its return value is kept with the ledger row
     * ({@link MessageReplyCodec}), and a duplicate returns the kept reply as the method's result,
     * which Spring AMQP's listener adapter converts and sends as any reply: to the new request's
     * {@code replyTo}, with the new request's correlation id. A duplicate whose row has no reply
     * returns {@code null}: nothing is sent, as without {@code storeReply}.
     *
     * @param delivered the container's delivery, acknowledged by the container advice when it is a
     *     duplicate (MANUAL acknowledgement), or {@code null} when the message came from an argument
     */
    private @Nullable Object invokeReplying(
            MethodInvocation invocation,
            HandlerDefinition definition,
            InboundMessage message,
            @Nullable Message delivered)
            throws Exception {
        MessageReplyCodec codec = replyCodec.get();
        HandlerResult<HandlerReply> result = executor()
                .executeReplying(
                        definition,
                        message,
                        () -> codec.encode(
                                delivered == null
                                        ? proceed(invocation)
                                        : notDoneIfNacked(delivered, proceed(invocation))));
        if (result.outcome() == MessageOutcome.DUPLICATE && delivered != null) {
            CurrentDelivery.skipped(List.of(delivered));
        }
        return codec.listenerResult(result, invocation.getMethod());
    }

    /**
     * Whether the listener container invokes {@code method} itself: a {@code @RabbitListener}
     * method, or a {@code @RabbitHandler} method of a class-level {@code @RabbitListener}.
     */
    public static boolean isListenerMethod(Method method, Class<?> targetClass) {
        return AnnotatedElementUtils.hasAnnotation(method, RabbitListener.class)
                || AnnotatedElementUtils.hasAnnotation(method, RabbitListeners.class)
                || AnnotatedElementUtils.hasAnnotation(method, RabbitHandler.class);
    }

    /** Whether {@code method} takes an AMQP {@link Message} or a list of them. */
    public static boolean hasAmqpMessageParameter(Method method) {
        for (Class<?> type : method.getParameterTypes()) {
            if (Message.class.isAssignableFrom(type)) {
                return true;
            }
        }
        return false;
    }

    /**
     * Checks at start-up that an annotated method can find its message: a listener method always
     * can (through the container's delivery); any other method needs an AMQP {@link Message},
     * messaging {@code Message} or {@code List} parameter.
     *
     * @throws IllegalStateException if it cannot, with what to do
     */
    public static void checkMessageSource(Method method, Class<?> targetClass) {
        if (isListenerMethod(method, targetClass)) {
            return;
        }
        for (Class<?> type : method.getParameterTypes()) {
            if (Message.class.isAssignableFrom(type)
                    || org.springframework.messaging.Message.class.isAssignableFrom(type)
                    || List.class.isAssignableFrom(type)) {
                return;
            }
        }
        throw new IllegalStateException("@IdempotentHandler method " + ClassUtils.getQualifiedMethodName(method)
                + " is not a @RabbitListener method and has no message parameter, so Sumi cannot tell which message it"
                + " guards. Give it an org.springframework.amqp.core.Message parameter, or put @IdempotentHandler on the"
                + " @RabbitListener method");
    }

    /**
     * The definition of an annotated method: its annotation, completed by the defaults. The
     * consumer name defaults to the {@code @RabbitListener} id (for a {@code @RabbitHandler} method,
     * the id of its class's {@code @RabbitListener}), else {@code Class.method}.
     *
     * @throws IllegalArgumentException if the annotation has an invalid lease or key expression
     */
    public HandlerDefinition definition(Method method, Class<?> targetClass) {
        return methods.definition(
                method,
                targetClass,
                m -> {
                    RabbitListener listener = AnnotatedElementUtils.findMergedAnnotation(m, RabbitListener.class);
                    if (listener == null && AnnotatedElementUtils.hasAnnotation(m, RabbitHandler.class)) {
                        // A @RabbitHandler method of a class-level @RabbitListener: that listener's id.
                        listener = AnnotatedElementUtils.findMergedAnnotation(targetClass, RabbitListener.class);
                    }
                    return listener != null ? listener.id() : null;
                },
                (m, definition) -> {
                    // Spring AMQP waits for a listener's CompletableFuture / Mono before it acks.
                    ListenerReturnTypes.check(m, true, "the RabbitMQ listener container", definition.storeReply());
                    if (definition.storeReply()) {
                        RabbitReplies.checkReplying(m);
                    }
                });
    }

    private static @Nullable InboundMessage singleMessage(Object[] args) {
        for (Object arg : args) {
            if (arg instanceof Message message) {
                return new RabbitInboundMessage(message);
            }
        }
        for (Object arg : args) {
            if (arg instanceof org.springframework.messaging.Message<?> message
                    && !(message.getPayload() instanceof List<?>)) {
                return new SpringMessageInboundMessage(message);
            }
        }
        return null;
    }

    @SuppressWarnings("unchecked")
    private static @Nullable List<Message> messageListArgument(Object[] args) {
        for (Object arg : args) {
            if (arg instanceof List<?> list && !list.isEmpty() && list.get(0) instanceof Message) {
                return (List<Message>) list;
            }
        }
        return null;
    }

    private @Nullable Object invokeBatch(MethodInvocation invocation, HandlerDefinition definition, List<Message> batch)
            throws Exception {
        // Before anything is claimed.
        ListenerReturnTypes.checkBatch(invocation.getMethod());
        List<InboundMessage> messages = new ArrayList<>(batch.size());
        batch.forEach(message -> messages.add(new RabbitInboundMessage(message)));
        Object[] args = invocation.getArguments();
        List<Integer> ran = new ArrayList<>();
        try {
            runBatch(invocation, definition, batch, messages, args, ran);
        } catch (BatchFailedException ex) {
            // The executor stopped the batch at a message it refused (claimed, not run): the
            // delivery's own refusal, which the container advice may hold and run again in place.
            if (batch == CurrentDelivery.batch() && Verdict.find(ex) == ex) {
                CurrentDelivery.refusedAtEntry(ex);
            }
            throw ex;
        } finally {
            // Also when the batch stopped: a held delivery's next run must know what the listener saw.
            if (ran.size() < batch.size() && batch == CurrentDelivery.batch()) {
                List<Message> skipped = new ArrayList<>();
                for (int i = 0; i < batch.size(); i++) {
                    if (!ran.contains(i)) {
                        skipped.add(batch.get(i));
                    }
                }
                CurrentDelivery.skipped(skipped);
            }
        }
        return null;
    }

    private void runBatch(
            MethodInvocation invocation,
            HandlerDefinition definition,
            List<Message> batch,
            List<InboundMessage> messages,
            Object[] args,
            List<Integer> ran)
            throws Exception {
        executor().executeBatch(definition, messages, indexes -> {
            ran.clear();
            ran.addAll(indexes);
            try {
                proceedClone(
                        invocation,
                        indexes.size() == batch.size() ? args : BatchArguments.filter(args, batch.size(), indexes));
            } catch (BatchFailedException ex) {
                // The method's index is in the (filtered) list it received.
                int index = ex.index();
                if (index < 0 || index >= indexes.size()) {
                    throw ex;
                }
                throw new BatchFailedException(indexes.get(index), ex.getCause() != null ? ex.getCause() : ex);
            }
            for (int index : indexes) {
                if (CurrentDelivery.negative(batch.get(index))) {
                    // The first message the MANUAL listener nacked or rejected and the ones after it
                    // are not done: released (or rolled back); the ones before it completed.
                    throw NotDoneSignal.from(index);
                }
            }
        });
    }

    /**
     * The listener's value, or the signal that the MANUAL listener nacked or rejected
     * {@code delivered} (Sumi's channel held the call back, {@link SumiRabbitContainerAdvice}): the
     * executor releases the claim (or rolls back), so the redelivery runs the handler.
     */
    private static @Nullable Object notDoneIfNacked(Message delivered, @Nullable Object value) throws NotDoneSignal {
        if (CurrentDelivery.negative(delivered)) {
            throw NotDoneSignal.of(value);
        }
        return value;
    }

    /**
     * Calls the method through a clone of the invocation, with {@code args}: a clone can be run
     * again (a transactional batch re-runs a prefix) and still passes the advice after Sumi's.
     */
    private static void proceedClone(MethodInvocation invocation, Object[] args) throws Exception {
        if (!(invocation instanceof ProxyMethodInvocation proxyInvocation)) {
            throw new IllegalStateException(
                    "@IdempotentHandler batch methods must be called through a Spring AOP proxy");
        }
        proceed(proxyInvocation.invocableClone(args));
    }

    private static @Nullable Object proceed(MethodInvocation invocation) throws Exception {
        try {
            return invocation.proceed();
        } catch (Exception | Error ex) {
            throw ex;
        } catch (Throwable ex) {
            throw new UndeclaredThrowableException(ex);
        }
    }
}
