package io.sumi.rabbit;

import io.sumi.consumer.HandlerDefaults;
import io.sumi.consumer.HandlerDefinition;
import io.sumi.consumer.HandlerResult;
import io.sumi.consumer.IdempotentExecutor;
import io.sumi.consumer.IdempotentHandler;
import io.sumi.consumer.InboundMessage;
import io.sumi.consumer.ListenerReturnTypes;
import io.sumi.consumer.MessageOutcome;
import io.sumi.consumer.NotDoneSignal;
import io.sumi.consumer.binder.IdempotentHandlerInterceptorSupport;
import io.sumi.consumer.exception.BatchFailedException;
import io.sumi.consumer.exception.Verdict;
import io.sumi.consumer.messaging.MessageReplyCodec;
import io.sumi.consumer.messaging.internal.BatchArguments;
import io.sumi.rabbit.internal.CurrentDelivery;
import io.sumi.rabbit.internal.RabbitListenerBinder;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;
import org.aopalliance.intercept.MethodInvocation;
import org.jspecify.annotations.Nullable;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.rabbit.annotation.RabbitHandler;
import org.springframework.amqp.rabbit.annotation.RabbitListener;
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
public final class IdempotentRabbitHandlerInterceptor extends IdempotentHandlerInterceptorSupport {

    /** Spring AMQP waits for a listener's {@code CompletableFuture} / {@code Mono} before it acks. */
    private static final boolean WAITS_FOR_ASYNC_RESULTS = true;

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
        super(executor, defaults, "the RabbitMQ listener container", WAITS_FOR_ASYNC_RESULTS);
        this.replyCodec = SingletonSupplier.of(replyCodec);
    }

    @Override
    protected @Nullable Object guard(
            MethodInvocation invocation, HandlerDefinition definition, boolean listenerInvocation) throws Exception {
        Object[] args = invocation.getArguments();
        if (listenerInvocation) {
            List<Message> batch = CurrentDelivery.batch();
            if (batch != null) {
                return invokeBatch(invocation, definition, batch);
            }
            Message current = CurrentDelivery.message();
            if (current != null && definition.storeReply()) {
                return executeReplying(
                        invocation,
                        definition,
                        new RabbitInboundMessage(current),
                        replyCodec.get(),
                        new DeliverySettlement(current, false));
            }
            if (current != null
                    && ListenerReturnTypes.of(invocation.getMethod()).isAsync()) {
                // Spring AMQP switches a container with asynchronous listeners to MANUAL acknowledgement
                // and acks the delivery when the returned future succeeds (nacks it, requeued, when it
                // fails), so the ack comes after the completion. A duplicate's completed future is acked
                // likewise: it is not handed to the container advice as skipped (that would ack it twice).
                return executeAsync(invocation, definition, new RabbitInboundMessage(current), Settlement.NONE);
            }
            if (current != null) {
                return execute(
                        invocation,
                        definition,
                        new RabbitInboundMessage(current),
                        new DeliverySettlement(current, true));
            }
        }
        InboundMessage message = messageArgument(args);
        if (message == null) {
            List<Message> messages = messageListArgument(args);
            if (messages != null) {
                return invokeBatch(invocation, definition, messages);
            }
            throw calledWithoutMessage(
                    invocation.getMethod(),
                    listenerInvocation,
                    "Sumi's container advice must be on its listener container factory (the starter puts it on"
                            + " every factory), or give it an org.springframework.amqp.core.Message parameter",
                    "it is not the @RabbitListener method the container invokes, so its key must come from its own"
                            + " arguments; give it an org.springframework.amqp.core.Message or List<Message> parameter,"
                            + " or put @IdempotentHandler on the @RabbitListener method");
        }
        if (definition.storeReply()) {
            return executeReplying(invocation, definition, message, replyCodec.get(), Settlement.NONE);
        }
        if (ListenerReturnTypes.of(invocation.getMethod()).isAsync()) {
            return executeAsync(invocation, definition, message, Settlement.NONE);
        }
        return execute(invocation, definition, message, Settlement.NONE);
    }

    /**
     * How the container's delivery {@code delivered} is settled by the container advice
     * ({@link SumiRabbitContainerAdvice}): a MANUAL listener's nack or reject of it (which Sumi's
     * channel held back) is "not done" for the executor, checked before a reply is encoded; a
     * duplicate is handed to the advice as skipped (it acknowledges it under MANUAL
     * acknowledgement); with {@code refusalsAtEntry}, a refusal of Sumi's before the listener ran
     * is recorded as the delivery's own, which the advice may hold and run again in place.
     */
    private record DeliverySettlement(Message delivered, boolean refusalsAtEntry) implements Settlement {

        @Override
        public @Nullable Object returned(@Nullable Object value) throws NotDoneSignal {
            return notDoneIfNacked(delivered, value);
        }

        @Override
        public void settled(HandlerResult<?> result) {
            if (result.outcome() == MessageOutcome.DUPLICATE) {
                CurrentDelivery.skipped(List.of(delivered));
            }
        }

        @Override
        public void failed(Throwable failure, boolean ran) {
            if (refusalsAtEntry && !ran && failure instanceof RuntimeException ex && Verdict.find(ex) != null) {
                CurrentDelivery.refusedAtEntry(ex);
            }
        }
    }

    /**
     * Whether the listener container invokes {@code method} itself: a {@code @RabbitListener}
     * method, or a {@code @RabbitHandler} method of a class-level {@code @RabbitListener}.
     */
    public static boolean isListenerMethod(Method method, Class<?> targetClass) {
        return RabbitListenerBinder.isListenerMethod(method);
    }

    /** Whether {@code method} takes an AMQP {@link Message} or a list of them. */
    public static boolean hasAmqpMessageParameter(Method method) {
        return RabbitListenerBinder.hasAmqpMessageParameter(method);
    }

    /**
     * Checks at start-up that an annotated method can find its message: a listener method always
     * can (through the container's delivery); any other method needs an AMQP {@link Message},
     * messaging {@code Message} or {@code List} parameter.
     *
     * @throws IllegalStateException if it cannot, with what to do
     */
    public static void checkMessageSource(Method method, Class<?> targetClass) {
        if (isListenerMethod(method, targetClass)
                || hasParameterOf(method, Message.class, org.springframework.messaging.Message.class, List.class)) {
            return;
        }
        throw new IllegalStateException("@IdempotentHandler method " + ClassUtils.getQualifiedMethodName(method)
                + " is not a @RabbitListener method and has no message parameter, so Sumi cannot tell which message it"
                + " guards. Give it an org.springframework.amqp.core.Message parameter, or put @IdempotentHandler on the"
                + " @RabbitListener method");
    }

    @Override
    protected boolean invokedByContainer(Method method, Class<?> targetClass) {
        return isListenerMethod(method, targetClass);
    }

    /**
     * The consumer name defaults to the {@code @RabbitListener} id (for a {@code @RabbitHandler}
     * method, the id of its class's {@code @RabbitListener}), else {@code Class.method}.
     */
    @Override
    protected @Nullable String listenerId(Method method, Class<?> targetClass) {
        RabbitListener listener = AnnotatedElementUtils.findMergedAnnotation(method, RabbitListener.class);
        if (listener == null && AnnotatedElementUtils.hasAnnotation(method, RabbitHandler.class)) {
            // A @RabbitHandler method of a class-level @RabbitListener: that listener's id.
            listener = AnnotatedElementUtils.findMergedAnnotation(targetClass, RabbitListener.class);
        }
        return listener != null ? listener.id() : null;
    }

    /**
     * A method taking the batch's AMQP messages ({@code List<Message>}): a consumer-batch listener
     * or a service method it hands its batch. A consumer-batch container (whose listener may take
     * payloads) is seen on the container ({@link SumiRabbitContainerAdvice#checkListener}).
     */
    @Override
    protected boolean runsAsBatch(Method method) {
        return hasListParameterOf(method, Message.class);
    }

    @Override
    protected void checkDefinition(Method method, HandlerDefinition definition) {
        if (definition.storeReply()) {
            RabbitReplies.checkReplying(method);
        }
    }

    @Override
    protected @Nullable InboundMessage nativeMessage(Object arg) {
        return arg instanceof Message message ? new RabbitInboundMessage(message) : null;
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
        // Before anything is claimed (start-up refuses the batch listeners it sees).
        ListenerReturnTypes.checkBatch(invocation.getMethod(), "a consumer-batch RabbitMQ listener container");
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
}
