package io.sumi.kafka;

import io.sumi.consumer.BatchResult;
import io.sumi.consumer.HandlerDefaults;
import io.sumi.consumer.HandlerDefinition;
import io.sumi.consumer.HandlerResult;
import io.sumi.consumer.IdempotentExecutor;
import io.sumi.consumer.IdempotentHandler;
import io.sumi.consumer.InboundMessage;
import io.sumi.consumer.ListenerReturnTypes;
import io.sumi.consumer.MessageOutcome;
import io.sumi.consumer.NotDoneSignal;
import io.sumi.consumer.PollClaim;
import io.sumi.consumer.binder.IdempotentHandlerInterceptorSupport;
import io.sumi.consumer.exception.BatchFailedException;
import io.sumi.consumer.messaging.MessageReplyCodec;
import io.sumi.consumer.messaging.internal.BatchArguments;
import io.sumi.kafka.internal.CurrentRecords;
import io.sumi.kafka.internal.DeferredAcknowledgment;
import io.sumi.kafka.internal.KafkaListenerBinder;
import io.sumi.kafka.internal.PollState;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Supplier;
import org.aopalliance.intercept.MethodInvocation;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.common.TopicPartition;
import org.jspecify.annotations.Nullable;
import org.springframework.core.annotation.AnnotatedElementUtils;
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
public final class IdempotentHandlerInterceptor extends IdempotentHandlerInterceptorSupport {

    /** Spring Kafka waits for a record listener's {@code CompletableFuture} / {@code Mono} before it acks. */
    private static final boolean WAITS_FOR_ASYNC_RESULTS = true;

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
        super(executor, defaults, "the Kafka listener container", WAITS_FOR_ASYNC_RESULTS);
        this.replyCodec = SingletonSupplier.of(replyCodec);
    }

    @Override
    protected @Nullable Object guard(
            MethodInvocation invocation, HandlerDefinition definition, boolean listenerInvocation) throws Exception {
        Object[] args = invocation.getArguments();
        ShareDelivery share = listenerInvocation ? ShareDelivery.current() : null;
        if (share != null) {
            // A share group's record: the share module settles it (ACCEPT, RELEASE, REJECT, RENEW)
            // from how the call ended; none of the consumer-group paths below applies.
            if (definition.storeReply()
                    || ListenerReturnTypes.of(invocation.getMethod()).isAsync()) {
                throw new IllegalStateException("Share-group listener " + invocation.getMethod()
                        + " keeps replies or returns a future: Spring Kafka drops a share listener's return"
                        + " value, so neither can be honoured; return void");
            }
            return execute(invocation, definition, new KafkaInboundMessage(share.record()), share.settlement());
        }
        // The handler's acknowledge() / nack() reach the container only once the message is
        // settled: a nack is not success, and nothing is committed before its completion is written.
        DeferredAcknowledgment ack = DeferredAcknowledgment.install(args);
        Settlement settlement = ack != null ? new AcknowledgmentSettlement(ack) : Settlement.NONE;
        if (listenerInvocation) {
            ConsumerRecords<?, ?> batch = CurrentRecords.batch();
            if (batch != null) {
                List<ConsumerRecord<?, ?>> records = new ArrayList<>(batch.count());
                batch.forEach(records::add);
                return invokeBatch(invocation, definition, records, ack);
            }
            ConsumerRecord<?, ?> current = CurrentRecords.record();
            if (current != null && definition.storeReply()) {
                return executeReplying(
                        invocation, definition, new KafkaInboundMessage(current), replyCodec.get(), settlement);
            }
            if (current != null
                    && ListenerReturnTypes.of(invocation.getMethod()).isAsync()) {
                // Never poll-claimed: a poll claim's completions are written with the poll's commit,
                // which does not wait for a record's future.
                return executeAsync(invocation, definition, new KafkaInboundMessage(current), settlement);
            }
            if (current != null) {
                PollClaim pollClaim = pollClaim(invocation.getMethod(), definition, current);
                KafkaInboundMessage message = new KafkaInboundMessage(current);
                if (pollClaim != null) {
                    int index = pollIndex(current);
                    // The record as dispatched (after the container's interceptors): its key wins.
                    return execute(invocation, settlement, body -> pollClaim.execute(index, message, body));
                }
                return execute(invocation, definition, message, settlement);
            }
        }
        InboundMessage message = messageArgument(args);
        if (message == null) {
            List<ConsumerRecord<?, ?>> records = recordListArgument(args);
            if (records != null) {
                return invokeBatch(invocation, definition, records, ack);
            }
            throw calledWithoutMessage(
                    invocation.getMethod(),
                    listenerInvocation,
                    "Sumi's record interceptor must be installed on its container factory (the starter does), or give"
                            + " it a ConsumerRecord or Message parameter",
                    "it is not the @KafkaListener method the container invokes, so its key must come from its own"
                            + " arguments; give it a ConsumerRecord, Message<?> or List<ConsumerRecord> parameter, or put"
                            + " @IdempotentHandler on the @KafkaListener method");
        }
        if (definition.storeReply()) {
            return executeReplying(invocation, definition, message, replyCodec.get(), settlement);
        }
        if (ListenerReturnTypes.of(invocation.getMethod()).isAsync()) {
            return executeAsync(invocation, definition, message, settlement);
        }
        return execute(invocation, definition, message, settlement);
    }

    /**
     * Passes the handler's kept acknowledgement on by how the call ended: a nack after a
     * {@code NOT_DONE}, an acknowledgement after any other result, nothing after an exception (the
     * error handler decides). The listener's nack is "not done" for the executor.
     *
     * <p>Asynchronous listeners: the acknowledgement reaches the container only once the row
     * followed the future, as for synchronous listeners (a nack inside an async listener is not
     * seen as "not done": documented in docs/consumer-semantics.md). Spring Kafka acknowledges an
     * asynchronous listener's record when the returned future succeeds and hands its failure to
     * the error handler, so the acknowledgement always comes after the completion.
     */
    private record AcknowledgmentSettlement(DeferredAcknowledgment ack) implements Settlement {

        @Override
        public @Nullable Object returned(@Nullable Object value) throws NotDoneSignal {
            ack.checkDone(value);
            return value;
        }

        @Override
        public void settled(HandlerResult<?> result) {
            ack.settleRecord(result.outcome() == MessageOutcome.NOT_DONE);
        }

        @Override
        public void failed(Throwable failure, boolean ran) {
            ack.abandon();
        }
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
        return poll.claimFor(definition, executor(), KafkaInboundMessage::new);
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
        return KafkaListenerBinder.isListenerMethod(method);
    }

    @Override
    protected boolean invokedByContainer(Method method, Class<?> targetClass) {
        return isListenerMethod(method);
    }

    /**
     * Checks at start-up that an annotated method can find its message: a listener method always
     * can (through the container's record); any other method needs a {@link ConsumerRecord},
     * {@link Message}, {@code List} of records or {@link ConsumerRecords} parameter.
     *
     * @throws IllegalStateException if it cannot, with what to do
     */
    public static void checkMessageSource(Method method) {
        if (isListenerMethod(method)
                || hasParameterOf(method, ConsumerRecord.class, Message.class, List.class, ConsumerRecords.class)) {
            return;
        }
        throw new IllegalStateException(
                "@IdempotentHandler method " + ClassUtils.getQualifiedMethodName(method)
                        + " is not a @KafkaListener method and has no message parameter, so Sumi cannot tell which message it guards"
                        + " (the record the container delivers belongs to the listener that calls it). Give it a ConsumerRecord,"
                        + " Message<?> or List<ConsumerRecord> parameter, or put @IdempotentHandler on the @KafkaListener method");
    }

    @Override
    protected @Nullable String listenerId(Method method, Class<?> targetClass) {
        KafkaListener listener = AnnotatedElementUtils.findMergedAnnotation(method, KafkaListener.class);
        return listener != null ? listener.id() : null;
    }

    /**
     * A {@code @KafkaListener(batch = "true")} method, or one taking the batch's records
     * ({@code List<ConsumerRecord>}, {@link ConsumerRecords}): a batch listener, or a service method
     * a batch listener hands its batch. A batch container factory is seen on the container
     * ({@link AsyncListenerCheck}).
     */
    @Override
    protected boolean runsAsBatch(Method method) {
        KafkaListener listener = AnnotatedElementUtils.findMergedAnnotation(method, KafkaListener.class);
        return (listener != null && "true".equalsIgnoreCase(listener.batch().trim()))
                || hasParameterOf(method, ConsumerRecords.class)
                || hasListParameterOf(method, ConsumerRecord.class);
    }

    @Override
    protected void checkDefinition(Method method, HandlerDefinition definition) {
        if (definition.storeReply()) {
            KafkaReplies.checkReplying(method);
        }
    }

    @Override
    protected @Nullable InboundMessage nativeMessage(Object arg) {
        return arg instanceof ConsumerRecord<?, ?> record ? new KafkaInboundMessage(record) : null;
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
        // Before anything is claimed (start-up refuses the batch listeners it sees).
        ListenerReturnTypes.checkBatch(invocation.getMethod(), "a batch Kafka listener container");
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
        } catch (Exception | Error ex) {
            if (ack != null) {
                ack.abandon();
            }
            if (ex instanceof BatchFailedException batchFailed) {
                throw batchListenerFailed(batchFailed, records);
            }
            throw ex;
        }
        if (ack != null) {
            ack.settleBatch(result.notDoneFrom());
        }
        return null;
    }

    /** Spring Kafka's form of a batch that stopped at {@code failed.index()}: the container commits the records before it. */
    private static BatchListenerFailedException batchListenerFailed(
            BatchFailedException failed, List<ConsumerRecord<?, ?>> records) {
        Throwable cause = failed.getCause() != null ? failed.getCause() : failed;
        ConsumerRecord<?, ?> record = records.get(failed.index());
        return new BatchListenerFailedException(
                "Record " + record.topic() + "-" + record.partition() + "@" + record.offset() + " (index "
                        + failed.index() + ") failed: " + cause.getMessage(),
                cause,
                failed.index());
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
}
