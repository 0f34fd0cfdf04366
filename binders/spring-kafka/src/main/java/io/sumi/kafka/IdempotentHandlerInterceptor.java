package io.sumi.kafka;

import io.sumi.consumer.BatchResult;
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
import io.sumi.consumer.MessageOutcome;
import io.sumi.consumer.PollClaim;
import io.sumi.consumer.exception.BatchFailedException;
import io.sumi.consumer.messaging.MessageReplyCodec;
import io.sumi.consumer.messaging.SpringMessageInboundMessage;
import io.sumi.consumer.messaging.internal.BatchArguments;
import io.sumi.kafka.internal.CurrentRecords;
import io.sumi.kafka.internal.DeferredAcknowledgment;
import io.sumi.kafka.internal.PollState;
import java.lang.reflect.Method;
import java.lang.reflect.UndeclaredThrowableException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.common.TopicPartition;
import org.jspecify.annotations.Nullable;
import org.springframework.aop.ProxyMethodInvocation;
import org.springframework.aop.support.AopUtils;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.kafka.annotation.KafkaHandler;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.annotation.KafkaListeners;
import org.springframework.kafka.listener.BatchListenerFailedException;
import org.springframework.messaging.Message;
import org.springframework.util.ClassUtils;
import org.springframework.util.function.SingletonSupplier;

/**
 * Runs {@link IdempotentHandler} methods through the {@link IdempotentExecutor}.
 *
 * <p>The message is found, in order: for the listener method the container invokes
 * ({@code @KafkaListener} / {@code @KafkaHandler}, not nested in another guarded call), the record
 * or batch the container is delivering on this thread (captured by Sumi's record/batch interceptor,
 * so any parameter style works); then, for every method, a {@link ConsumerRecord} argument, a
 * {@link Message} argument, a {@code List<ConsumerRecord>} or {@link ConsumerRecords} argument.
 * An annotated method that is not the listener (a listener calls it per record, or fans out to it)
 * is therefore guarded with the key of its own argument, never with the listener's record; one
 * without a message parameter is refused ({@link #checkMessageSource}). A batch (the container delivers a
 * batch, or a {@code List<ConsumerRecord>} argument) is claimed in one round trip, and the method
 * is called once with the records still to process: every {@code List} argument whose size is the
 * batch's ({@code List<ConsumerRecord>}, {@code List<Message<?>>}, payload lists, {@code @Header}
 * lists), {@link ConsumerRecords} and {@code Message<List<?>>} arguments are filtered alike.
 *
 * <p>Batch failures use Spring Kafka's {@link BatchListenerFailedException}: when the method
 * throws one, the records before the failed one count as done and the failed one and the rest are
 * redelivered; Sumi translates its index between the filtered list the method saw and the batch.
 */
public final class IdempotentHandlerInterceptor implements MethodInterceptor {

    private final HandlerMethods methods;
    private final Supplier<MessageReplyCodec> replyCodec;

    public IdempotentHandlerInterceptor(IdempotentExecutor executor, HandlerDefaults defaults) {
        this(() -> executor, () -> defaults);
    }

    /**
     * An interceptor that looks its executor and defaults up on first use, so that creating the
     * advisor (which the auto-proxy creator does early) creates neither the ledger's DataSource nor
     * the configuration properties early.
     */
    public IdempotentHandlerInterceptor(Supplier<IdempotentExecutor> executor, Supplier<HandlerDefaults> defaults) {
        this(executor, defaults, KafkaReplies::codec);
    }

    /**
     * An interceptor that looks its executor, defaults and reply codec up on first use.
     *
     * @param replyCodec how listeners that keep their replies ({@code storeReply}) keep them
     *     ({@link KafkaReplies#codec(org.springframework.messaging.converter.MessageConverter)})
     * @since 0.1.0
     */
    public IdempotentHandlerInterceptor(
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
        // The handler's acknowledge() / nack() reach the container only once the message is
        // settled: a nack is not success, and nothing is committed before its completion is written.
        DeferredAcknowledgment ack = DeferredAcknowledgment.install(args);

        // The record (or batch) on the thread belongs to the listener method the container invokes,
        // not to another annotated method that listener calls: that one is guarded with the
        // message of its own arguments (a batch listener calling handle(record) per record, a
        // listener fanning out to sub-messages). A nested guarded call is never the listener's.
        boolean listenerInvocation = isListenerMethod(invocation.getMethod())
                && IdempotencyContext.find().isEmpty();
        if (listenerInvocation) {
            ConsumerRecords<?, ?> batch = CurrentRecords.batch();
            if (batch != null) {
                List<ConsumerRecord<?, ?>> records = new ArrayList<>(batch.count());
                batch.forEach(records::add);
                return invokeBatch(invocation, definition, records, ack);
            }
            ConsumerRecord<?, ?> current = CurrentRecords.record();
            if (current != null && definition.storeReply()) {
                return invokeReplying(invocation, definition, new KafkaInboundMessage(current), ack);
            }
            if (current != null
                    && ListenerReturnTypes.of(invocation.getMethod()).isAsync()) {
                // Never poll-claimed: a poll claim's completions are written with the poll's commit,
                // which does not wait for a record's future.
                return invokeAsync(invocation, definition, new KafkaInboundMessage(current), ack);
            }
            if (current != null) {
                PollClaim pollClaim = pollClaim(invocation.getMethod(), definition, current);
                KafkaInboundMessage message = new KafkaInboundMessage(current);
                if (pollClaim != null) {
                    int index = pollIndex(current);
                    // The record as dispatched (after the container's interceptors): its key wins.
                    return settled(ack, () -> pollClaim.execute(index, message, body(invocation, ack)));
                }
                return settled(ack, () -> executor().execute(definition, message, body(invocation, ack)));
            }
        }
        InboundMessage message = singleMessage(args);
        if (message == null) {
            List<ConsumerRecord<?, ?>> records = recordListArgument(args);
            if (records != null) {
                return invokeBatch(invocation, definition, records, ack);
            }
            throw new IllegalStateException(
                    "@IdempotentHandler method " + ClassUtils.getQualifiedMethodName(invocation.getMethod())
                            + " was called without a message: "
                            + (listenerInvocation
                                    ? "Sumi's record interceptor must be installed on its container factory (the starter does), or give"
                                            + " it a ConsumerRecord or Message parameter"
                                    : "it is not the @KafkaListener method the container invokes, so its key must come from its own"
                                            + " arguments; give it a ConsumerRecord, Message<?> or List<ConsumerRecord> parameter, or put"
                                            + " @IdempotentHandler on the @KafkaListener method"));
        }
        if (definition.storeReply()) {
            return invokeReplying(invocation, definition, message, ack);
        }
        if (ListenerReturnTypes.of(invocation.getMethod()).isAsync()) {
            return invokeAsync(invocation, definition, message, ack);
        }
        return settled(ack, () -> executor().execute(definition, message, body(invocation, ack)));
    }

    /** A call of the executor for one message, for {@link #settled}. */
    @FunctionalInterface
    private interface RecordCall<T> {
        HandlerResult<T> call() throws Exception;
    }

    /**
     * Runs {@code call} and passes the handler's kept acknowledgement on by how it ended: a nack
     * after a {@code NOT_DONE}, an acknowledgement after any other result, nothing after an
     * exception (the error handler decides).
     */
    private static <T> @Nullable T settled(@Nullable DeferredAcknowledgment ack, RecordCall<T> call) throws Exception {
        HandlerResult<T> result;
        try {
            result = call.call();
        } catch (Exception | Error ex) {
            if (ack != null) {
                ack.abandon();
            }
            throw ex;
        }
        if (ack != null) {
            ack.settleRecord(result.outcome() == MessageOutcome.NOT_DONE);
        }
        return result.value();
    }

    /** The listener's call, which says "not done" to the executor when the listener nacked. */
    private static HandlerBody<Object> body(MethodInvocation invocation, @Nullable DeferredAcknowledgment ack) {
        return () -> {
            Object value = proceed(invocation);
            if (ack != null) {
                ack.checkDone(value);
            }
            return value;
        };
    }

    /**
     * Runs a method returning a {@code CompletableFuture} or {@code Mono}: its row follows the
     * future ({@link IdempotentExecutor#executeAsync}), and the container gets a future of the same
     * type that completes only after the row is completed (or released). Spring Kafka acknowledges
     * an asynchronous listener's record when that future succeeds and hands its failure to the
     * error handler, so the acknowledgement always comes after the completion.
     */
    private Object invokeAsync(
            MethodInvocation invocation,
            HandlerDefinition definition,
            InboundMessage message,
            @Nullable DeferredAcknowledgment ack)
            throws Exception {
        ListenerReturnTypes.Kind kind = ListenerReturnTypes.of(invocation.getMethod());
        CompletableFuture<HandlerResult<Object>> result =
                executor().executeAsync(definition, message, () -> ListenerReturnTypes.toFuture(proceed(invocation)));
        if (ack != null) {
            // The listener's own acknowledgement reaches the container only once the row followed
            // the future, as for synchronous listeners (a nack inside an async listener is not
            // seen as "not done": documented in docs/consumer-semantics.md).
            result = result.whenComplete((settled, failure) -> {
                if (failure != null) {
                    ack.abandon();
                } else {
                    ack.settleRecord(settled.outcome() == MessageOutcome.NOT_DONE);
                }
            });
        }
        return ListenerReturnTypes.toResult(kind, result.thenApply(HandlerResult::value));
    }

    /**
     * Runs a listener that keeps its replies: its return value is kept with the ledger row
     * ({@link MessageReplyCodec}), and a duplicate returns the kept reply as the method's result,
     * which Spring Kafka's listener adapter then sends as it sends any {@code @SendTo} reply: to the
     * new request's reply topic, with the new request's correlation id. A duplicate whose row has
     * no reply returns {@code null}: nothing is sent, as without {@code storeReply}.
     */
    private @Nullable Object invokeReplying(
            MethodInvocation invocation,
            HandlerDefinition definition,
            InboundMessage message,
            @Nullable DeferredAcknowledgment ack)
            throws Exception {
        MessageReplyCodec codec = replyCodec.get();
        HandlerResult<HandlerReply> result;
        try {
            result = executor().executeReplying(definition, message, () -> {
                HandlerReply reply = codec.encode(proceed(invocation));
                if (ack != null) {
                    ack.checkDone(reply);
                }
                return reply;
            });
        } catch (Exception | Error ex) {
            if (ack != null) {
                ack.abandon();
            }
            throw ex;
        }
        if (ack != null) {
            ack.settleRecord(result.outcome() == MessageOutcome.NOT_DONE);
        }
        return codec.listenerResult(result, invocation.getMethod());
    }

    /**
     * The claims of the poll {@code record} came from, taken on its first dispatch, when its
     * consumer claims polls ({@code sumi.kafka.poll-claim}) and {@code method} is a
     * {@code @KafkaListener} method (a class-level listener's {@code @KafkaHandler} methods each see
     * only some of a poll's records); {@code null}: the record takes the ordinary path.
     */
    private @Nullable PollClaim pollClaim(Method method, HandlerDefinition definition, ConsumerRecord<?, ?> record) {
        PollState poll = PollState.current();
        if (poll == null
                || poll.indexOf(record) < 0
                || !(AnnotatedElementUtils.hasAnnotation(method, KafkaListener.class)
                        || AnnotatedElementUtils.hasAnnotation(method, KafkaListeners.class))) {
            return null;
        }
        return poll.claimFor(definition, executor());
    }

    private static int pollIndex(ConsumerRecord<?, ?> record) {
        return Objects.requireNonNull(PollState.current()).indexOf(record);
    }

    /**
     * Whether the listener container invokes {@code method} itself (a {@code @KafkaListener} or
     * {@code @KafkaHandler} method): only then is the record the container is delivering on this
     * thread the method's message. Any other annotated method takes its message from its arguments.
     */
    public static boolean isListenerMethod(Method method) {
        return AnnotatedElementUtils.hasAnnotation(method, KafkaListener.class)
                || AnnotatedElementUtils.hasAnnotation(method, KafkaListeners.class)
                || AnnotatedElementUtils.hasAnnotation(method, KafkaHandler.class);
    }

    /**
     * Checks at start-up that an annotated method can find its message: a listener method always
     * can (through the container's record); any other method needs a {@link ConsumerRecord},
     * {@link Message}, {@code List} of records or {@link ConsumerRecords} parameter.
     *
     * @throws IllegalStateException if it cannot, with what to do
     */
    public static void checkMessageSource(Method method) {
        if (isListenerMethod(method)) {
            return;
        }
        for (Class<?> type : method.getParameterTypes()) {
            if (ConsumerRecord.class.isAssignableFrom(type)
                    || Message.class.isAssignableFrom(type)
                    || List.class.isAssignableFrom(type)
                    || ConsumerRecords.class.isAssignableFrom(type)) {
                return;
            }
        }
        throw new IllegalStateException(
                "@IdempotentHandler method " + ClassUtils.getQualifiedMethodName(method)
                        + " is not a @KafkaListener method and has no message parameter, so Sumi cannot tell which message it guards"
                        + " (the record the container delivers belongs to the listener that calls it). Give it a ConsumerRecord,"
                        + " Message<?> or List<ConsumerRecord> parameter, or put @IdempotentHandler on the @KafkaListener method");
    }

    /**
     * The definition of an annotated method: its annotation, completed by the defaults. Parses the
     * lease and key expression, so calling it at start-up reports a bad annotation early.
     *
     * @throws IllegalArgumentException if the annotation has an invalid lease or key expression
     */
    public HandlerDefinition definition(Method method, Class<?> targetClass) {
        return methods.definition(
                method,
                targetClass,
                m -> {
                    KafkaListener listener = AnnotatedElementUtils.findMergedAnnotation(m, KafkaListener.class);
                    return listener != null ? listener.id() : null;
                },
                (m, definition) -> {
                    // Spring Kafka waits for a record listener's CompletableFuture / Mono before it acks.
                    ListenerReturnTypes.check(m, true, "the Kafka listener container", definition.storeReply());
                    if (definition.storeReply()) {
                        KafkaReplies.checkReplying(m);
                    }
                });
    }

    private static @Nullable InboundMessage singleMessage(Object[] args) {
        for (Object arg : args) {
            if (arg instanceof ConsumerRecord<?, ?> record) {
                return new KafkaInboundMessage(record);
            }
        }
        for (Object arg : args) {
            if (arg instanceof Message<?> message && !(message.getPayload() instanceof List<?>)) {
                return new SpringMessageInboundMessage(message);
            }
        }
        return null;
    }

    @SuppressWarnings("unchecked")
    private static @Nullable List<ConsumerRecord<?, ?>> recordListArgument(Object[] args) {
        for (Object arg : args) {
            if (arg instanceof List<?> list && !list.isEmpty() && list.get(0) instanceof ConsumerRecord<?, ?>) {
                return (List<ConsumerRecord<?, ?>>) list;
            }
            if (arg instanceof ConsumerRecords<?, ?> records) {
                List<ConsumerRecord<?, ?>> copy = new ArrayList<>(records.count());
                records.forEach(copy::add);
                return copy;
            }
        }
        return null;
    }

    private @Nullable Object invokeBatch(
            MethodInvocation invocation,
            HandlerDefinition definition,
            List<ConsumerRecord<?, ?>> records,
            @Nullable DeferredAcknowledgment ack)
            throws Exception {
        // Before anything is claimed.
        ListenerReturnTypes.checkBatch(invocation.getMethod());
        List<InboundMessage> messages = new ArrayList<>(records.size());
        records.forEach(record -> messages.add(new KafkaInboundMessage(record)));
        Object[] args = invocation.getArguments();
        BatchResult result;
        try {
            result = executor().executeBatch(definition, messages, indexes -> {
                if (ack != null) {
                    ack.view(indexes);
                }
                try {
                    proceedClone(invocation, indexes.size() == records.size() ? args : filter(args, records, indexes));
                    if (ack != null) {
                        ack.checkDone(null);
                    }
                } catch (BatchListenerFailedException ex) {
                    int original = originalIndex(ex, records, indexes);
                    if (original < 0) {
                        throw ex;
                    }
                    throw new BatchFailedException(original, ex.getCause() != null ? ex.getCause() : ex);
                }
            });
        } catch (BatchFailedException ex) {
            if (ack != null) {
                ack.abandon();
            }
            Throwable cause = ex.getCause() != null ? ex.getCause() : ex;
            ConsumerRecord<?, ?> failed = records.get(ex.index());
            throw new BatchListenerFailedException(
                    "Record " + failed.topic() + "-" + failed.partition() + "@" + failed.offset() + " (index "
                            + ex.index() + ") failed: " + cause.getMessage(),
                    cause,
                    ex.index());
        } catch (Exception | Error ex) {
            if (ack != null) {
                ack.abandon();
            }
            throw ex;
        }
        if (ack != null) {
            ack.settleBatch(result.notDoneFrom());
        }
        return null;
    }

    private static int originalIndex(
            BatchListenerFailedException ex, List<ConsumerRecord<?, ?>> records, List<Integer> indexes) {
        if (ex.getRecord() != null) {
            for (int i = 0; i < records.size(); i++) {
                if (records.get(i) == ex.getRecord()) {
                    return i;
                }
            }
        }
        int index = ex.getIndex();
        return index >= 0 && index < indexes.size() ? indexes.get(index) : -1;
    }

    /** The arguments with every per-record list (and a {@code ConsumerRecords}) cut down to {@code indexes}. */
    private static Object[] filter(Object[] args, List<ConsumerRecord<?, ?>> records, List<Integer> indexes) {
        Object[] filtered = BatchArguments.filter(args, records.size(), indexes);
        for (int a = 0; a < args.length; a++) {
            if (args[a] instanceof ConsumerRecords<?, ?>) {
                filtered[a] = consumerRecords(records, indexes);
            }
        }
        return filtered;
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private static ConsumerRecords<?, ?> consumerRecords(List<ConsumerRecord<?, ?>> records, List<Integer> indexes) {
        Map<TopicPartition, List<ConsumerRecord>> byPartition = new LinkedHashMap<>();
        for (int index : indexes) {
            ConsumerRecord<?, ?> record = records.get(index);
            byPartition
                    .computeIfAbsent(new TopicPartition(record.topic(), record.partition()), tp -> new ArrayList<>())
                    .add(record);
        }
        return new ConsumerRecords(byPartition, Map.of());
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
