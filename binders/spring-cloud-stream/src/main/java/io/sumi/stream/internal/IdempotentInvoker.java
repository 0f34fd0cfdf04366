package io.sumi.stream.internal;

import io.sumi.consumer.HandlerDefinition;
import io.sumi.consumer.HandlerReply;
import io.sumi.consumer.HandlerResult;
import io.sumi.consumer.IdempotencyContext;
import io.sumi.consumer.IdempotentExecutor;
import io.sumi.consumer.InboundMessage;
import io.sumi.consumer.MessageKeyResolver;
import io.sumi.consumer.MessageOutcome;
import io.sumi.consumer.binder.BusyHold;
import io.sumi.consumer.binder.BusyPolicy;
import io.sumi.consumer.binder.IdempotentHandlerInterceptorSupport;
import io.sumi.consumer.exception.BatchFailedException;
import io.sumi.consumer.exception.LedgerUnavailableException;
import io.sumi.consumer.exception.ListenerStoppingException;
import io.sumi.consumer.exception.MessageBusyException;
import io.sumi.consumer.exception.ReconciliationRequiredException;
import io.sumi.consumer.exception.Verdict;
import io.sumi.consumer.messaging.MessageReplyCodec;
import io.sumi.consumer.messaging.SpringMessageInboundMessage;
import io.sumi.store.StoredReply;
import java.lang.reflect.Type;
import java.lang.reflect.UndeclaredThrowableException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.messaging.Message;
import org.springframework.messaging.MessageHeaders;
import org.springframework.messaging.support.MessageBuilder;
import org.springframework.util.ClassUtils;

/**
 * Runs one idempotent function through the {@link IdempotentExecutor}, for the wrappers that the
 * post-processor puts around function beans.
 *
 * <p>Per call: the message is the one the binder delivered to the input binding on this thread
 * ({@link InboundMessages}), else the function's input if it is a {@link Message}. When the input
 * is a {@code Message} whose key differs from the delivered message's, the function was called by
 * another function with a message of its own (a fan-out), and that message is guarded: the key
 * always comes from the invocation being guarded. (A bare payload passed by another function
 * cannot be told apart from the binding's call: such a function must take {@code Message<T>}.) A batch (a
 * {@code List} payload with per-record headers: the Kafka binder's
 * {@value #KAFKA_BATCH_HEADERS}, the Rabbit binder's {@value #RABBIT_BATCH_HEADERS}) is claimed in
 * one round trip, and the function is called with the records still to process, its list (or the
 * list payload and list-valued headers of its {@code Message<List<?>>}) filtered alike.
 *
 * <p>A busy key (and a row awaiting reconciliation) is held on the listener thread under the core's
 * {@link BusyPolicy} (the binder's {@code StreamSettings#busyPolicy()}): claimed again every
 * retry interval, at least until the holder's lease it first met has ended by the database's clock
 * and at least the policy's wait, so that a key
 * whose holder died never reaches the binder's retry and dead-letter destination (nor a quorum
 * queue's {@code x-delivery-limit}) while that lease lives. Past the hold, when the application
 * closes, and for every other failure, the exception goes to the binder unchanged (its retry, then
 * its dead-letter destination; on the Kafka binder without a DLQ, a busy key then goes to the
 * listener container, which {@link io.sumi.stream.SumiKafkaBinderContainerCustomizer} taught to
 * deliver it again). A batch that stops at a record throws a {@link BatchFailedException} with the
 * record's index, on the Kafka binder Spring Kafka's {@code BatchListenerFailedException}, so the
 * container commits the records before it and delivers the rest again.
 *
 * <p>Where the binder says which container delivers the message ({@link DeliveringContainer}: the
 * Kafka binder's containers), that container's stop (a binding's stop, the application's close)
 * ends the hold at once, and a message that did not succeed while the container stops (its
 * handler failed, its hold ended) is left unsettled: Sumi throws a {@link ListenerStoppingException}
 * with the failure as its cause, which the binder neither retries nor dead-letters
 * ({@link io.sumi.stream.SumiKafkaBinderContainerCustomizer}), so it runs again after the restart;
 * a message delivered while the container stops (the binder's retry of it, the rest of a poll) is
 * not run. Thread-safe.
 */
public final class IdempotentInvoker {

    static final String KAFKA_BATCH_HEADERS = "kafka_batchConvertedHeaders";
    static final String RABBIT_BATCH_HEADERS = "amqp_batchedHeaders";

    private static final Logger log = LoggerFactory.getLogger(IdempotentInvoker.class);

    private static final boolean KAFKA_PRESENT = ClassUtils.isPresent(
            "org.springframework.kafka.listener.BatchListenerFailedException",
            IdempotentInvoker.class.getClassLoader());

    /** Sumi's deferring Kafka acknowledgment (sumi-binder-spring-kafka, an optional dependency) can be used. */
    private static final boolean KAFKA_ACKNOWLEDGMENTS_PRESENT = KAFKA_PRESENT
            && ClassUtils.isPresent(
                    "io.sumi.kafka.internal.DeferredAcknowledgment", IdempotentInvoker.class.getClassLoader());

    /** The Rabbit binder's channel header, present on a MANUAL binding's messages ({@code AmqpHeaders.CHANNEL}). */
    static final String RABBIT_CHANNEL_HEADER = "amqp_channel";

    /** Sumi's settling channel (sumi-binder-spring-amqp, an optional dependency) can be used. */
    private static final boolean RABBIT_ACKNOWLEDGMENTS_PRESENT = ClassUtils.isPresent(
                    "org.springframework.amqp.support.AmqpHeaders", IdempotentInvoker.class.getClassLoader())
            && ClassUtils.isPresent(
                    "io.sumi.rabbit.internal.SettlingChannel", IdempotentInvoker.class.getClassLoader());

    private final String beanName;
    private final HandlerDefinition definition;
    private final Supplier<IdempotentExecutor> executor;
    private final BusyPolicy busyPolicy;
    private final BooleanSupplier running;
    private final @Nullable Replies replies;

    /**
     * How a function that keeps its replies ({@code storeReply}) keeps them.
     *
     * @param codec keeps the function's output and reads it back
     * @param outputType the function's declared output type, a kept converted body is read back as
     *     (its payload type for a {@code Message<T>}; {@code byte[]} when it cannot be resolved)
     */
    public record Replies(MessageReplyCodec codec, Type outputType) {}

    /**
     * The function's own settlement of its message (a MANUAL binding's acknowledgment), deferred
     * until Sumi has settled the message: the core's settlement contract
     * ({@link IdempotentHandlerInterceptorSupport.Settlement}: {@code returned} throws
     * {@link io.sumi.consumer.NotDoneSignal} after a nack, {@code settled} passes the function's
     * calls on, a duplicate's own acknowledgment included), plus the input carrying the deferring
     * acknowledgment. On {@code failed} nothing is passed on: the binder's error handling settles
     * the delivery (the Rabbit binder's republish to the DLQ acknowledges it).
     */
    interface Settlement extends IdempotentHandlerInterceptorSupport.Settlement {
        /** The input to call the function with (carrying the deferring acknowledgment). */
        Object input();
    }

    /**
     * @param beanName the function bean, for messages
     * @param definition the handler's resolved settings
     * @param executor looked up on the first message, so that wrapping the bean does not create the ledger early
     * @param busyPolicy how a busy key is held in place (from the binder's {@code StreamSettings}, which
     *     this package does not name: {@code io.sumi.stream} depends on it, not the reverse)
     */
    public IdempotentInvoker(
            String beanName,
            HandlerDefinition definition,
            Supplier<IdempotentExecutor> executor,
            BusyPolicy busyPolicy) {
        this(beanName, definition, executor, busyPolicy, null);
    }

    /**
     * @param replies how the function keeps its replies; required when the definition says {@code storeReply}
     */
    public IdempotentInvoker(
            String beanName,
            HandlerDefinition definition,
            Supplier<IdempotentExecutor> executor,
            BusyPolicy busyPolicy,
            @Nullable Replies replies) {
        this(beanName, definition, executor, busyPolicy, replies, () -> true);
    }

    /**
     * @param running whether the application still runs: a held message is handed to the binder
     *     once it says {@code false} (the context closes), so that shutdown does not wait for a hold
     */
    public IdempotentInvoker(
            String beanName,
            HandlerDefinition definition,
            Supplier<IdempotentExecutor> executor,
            BusyPolicy busyPolicy,
            @Nullable Replies replies,
            BooleanSupplier running) {
        if (definition.storeReply() && replies == null) {
            throw new IllegalArgumentException(
                    "The function '" + beanName + "' keeps its replies (storeReply)" + " but was given no reply codec");
        }
        this.beanName = beanName;
        this.definition = definition;
        this.executor = executor;
        this.busyPolicy = busyPolicy;
        this.running = running;
        this.replies = replies;
    }

    public HandlerDefinition definition() {
        return definition;
    }

    /**
     * Runs {@code target} on {@code input} (as Spring Cloud Function converted it) unless the
     * message is done.
     *
     * @return what {@code target} returned, or {@code null} for a duplicate (no output); for a
     *     function that keeps its replies, a duplicate's kept reply, which the binder sends as the output
     */
    public @Nullable Object invoke(Object input, Function<Object, @Nullable Object> target) {
        if (stopping()) {
            // Neither claimed nor run: the stop came first (the binder retries an interrupted message).
            throw new ListenerStoppingException(definition.consumer(), null);
        }
        Message<?> delivered = deliveredMessage(input);
        refuseUnsettledManual(delivered);
        if (isBatch(delivered)) {
            invokeBatch(delivered, input, target);
            return null;
        }
        InboundMessages.Frame frame = InboundMessages.current();
        InboundMessage message =
                new SpringMessageInboundMessage(viewOf(delivered, payloadOf(input)), delivered.getPayload());
        if (replies != null) {
            return invokeReplying(replies, input, delivered, message, frame, target);
        }
        String[] key = new String[1];
        // A MANUAL binding: the function's acks and nacks wait for Sumi's settlement.
        Settlement settlement = settlement(delivered, input, frame);
        Object callInput = settlement == null ? input : settlement.input();
        boolean[] ran = {false};
        HandlerResult<@Nullable Object> result;
        try {
            result = retryingWhileBusy(() -> executor.get().execute(definition, message, () -> {
                ran[0] = true;
                key[0] = IdempotencyContext.current().key();
                Object value = target.apply(callInput);
                // A nack is not success: NotDoneSignal releases the claim.
                return settlement == null ? value : settlement.returned(value);
            }));
        } catch (RuntimeException ex) {
            if (settlement != null) {
                settlement.failed(ex, ran[0]);
            }
            throw interrupted(ex);
        } catch (Error ex) {
            if (settlement != null) {
                settlement.failed(ex, ran[0]);
            }
            throw ex;
        }
        if (settlement != null) {
            settlement.settled(result);
        }
        if (result.outcome() == MessageOutcome.PROCESSED && frame != null && frame.message() == delivered) {
            // The function's output is sent after it returns: it gets the key too.
            frame.outputKey(key[0]);
        }
        return result.value();
    }

    /**
     * The settlement of a MANUAL binding's delivery, or {@code null}: the Kafka binder's
     * acknowledgment header, else the Rabbit binder's channel header. The Rabbit one only for the
     * message the binding delivered (a message another function built carries the delivery's tag
     * only if it copied the headers, and Sumi must not acknowledge that tag for it).
     */
    private @Nullable Settlement settlement(Message<?> delivered, Object input, InboundMessages.@Nullable Frame frame) {
        Settlement kafka = KAFKA_ACKNOWLEDGMENTS_PRESENT ? KafkaAcknowledgments.defer(input) : null;
        if (kafka != null || !delivered.getHeaders().containsKey(RABBIT_CHANNEL_HEADER)) {
            return kafka;
        }
        if (frame != null && frame.message() != delivered) {
            return null;
        }
        if (!RABBIT_ACKNOWLEDGMENTS_PRESENT) {
            // Without the settling channel a duplicate would never be acknowledged (the binding
            // stalls) and a nack would complete the row: refused before anything is claimed.
            throw new IllegalStateException("The @IdempotentHandler function '" + beanName + "' is bound with"
                    + " acknowledge-mode MANUAL on the Rabbit binder, which needs io.sumi:sumi-binder-spring-amqp"
                    + " on the class path (Sumi settles the delivery with the function's acks and nacks through it)");
        }
        return RabbitAcknowledgments.defer(delivered, input);
    }

    /**
     * Refuses, before anything is claimed, a MANUAL Rabbit binding's delivery that Sumi cannot
     * settle: a batch, or one for a function that keeps its replies ({@code storeReply}). Neither
     * path goes through the settling channel, so a duplicate would never be acknowledged (the
     * binding stalls once its prefetch is unacknowledged) and the function's nack would not be
     * seen (the row would be completed). Only the message the binding delivered is looked at, as
     * in {@link #settlement}: a message another function built may carry its headers.
     */
    private void refuseUnsettledManual(Message<?> delivered) {
        InboundMessages.Frame frame = InboundMessages.current();
        if (frame != null && frame.message() != delivered) {
            return;
        }
        boolean batch = isBatch(delivered);
        if (!(batch || replies != null) || !manualRabbit(delivered, batch)) {
            return;
        }
        String what = batch
                ? "is bound to a batch binding (batch-mode)"
                : "keeps its replies (@IdempotentHandler(storeReply = true))";
        throw new IllegalStateException("The @IdempotentHandler function '" + beanName + "' " + what
                + " and its binding (queue '" + binding(delivered) + "') has acknowledge-mode MANUAL on the"
                + " Rabbit binder, where Sumi cannot settle its deliveries with the function's acks and nacks (a"
                + " duplicate would never be acknowledged and a nack would complete the message): set"
                + " spring.cloud.stream.rabbit.bindings.<binding>.consumer.acknowledge-mode to AUTO, or make it a"
                + " single-message function without storeReply");
    }

    /** Whether {@code delivered} came from a MANUAL Rabbit binding: it (or a batch's record) carries the channel. */
    private static boolean manualRabbit(Message<?> delivered, boolean batch) {
        if (delivered.getHeaders().containsKey(RABBIT_CHANNEL_HEADER)) {
            return true;
        }
        return batch
                && delivered.getHeaders().get(RABBIT_BATCH_HEADERS) instanceof List<?> records
                && records.stream().anyMatch(r -> r instanceof Map<?, ?> map && map.containsKey(RABBIT_CHANNEL_HEADER));
    }

    /** The queue the delivery came from, for the refusal ({@code amqp_consumerQueue}), or {@code "?"}. */
    private static String binding(Message<?> delivered) {
        Object queue = delivered.getHeaders().get("amqp_consumerQueue");
        return queue != null ? queue.toString() : "?";
    }

    /**
     * Runs a function that keeps its replies: its output is kept with the ledger row, and a
     * duplicate returns the kept output, which Spring Cloud Stream sends to the output binding as
     * it sends any output (a payload gets the new input's headers; a kept {@code Message} its kept
     * headers). A duplicate whose row has no reply returns {@code null}: no output, as without
     * {@code storeReply}.
     */
    private @Nullable Object invokeReplying(
            Replies replies,
            Object input,
            Message<?> delivered,
            InboundMessage message,
            InboundMessages.@Nullable Frame frame,
            Function<Object, @Nullable Object> target) {
        MessageReplyCodec codec = replies.codec();
        String[] key = new String[1];
        HandlerResult<HandlerReply> result;
        try {
            result = retryingWhileBusy(() -> executor.get().executeReplying(definition, message, () -> {
                key[0] = IdempotencyContext.current().key();
                return codec.encode(target.apply(input));
            }));
        } catch (RuntimeException ex) {
            throw interrupted(ex);
        }
        HandlerReply reply = result.value();
        if (reply == null) {
            return null;
        }
        if (result.outcome() == MessageOutcome.PROCESSED) {
            if (frame != null && frame.message() == delivered) {
                frame.outputKey(key[0]);
            }
            return reply.value();
        }
        StoredReply stored = reply.stored();
        if (stored == null) {
            return null;
        }
        if (frame != null && frame.message() == delivered) {
            // The output sent again carries the key as the first one did.
            frame.outputKey(executor.get().keyResolver().resolve(definition, message));
        }
        return codec.decode(stored, replies.outputType());
    }

    // ---------------------------------------------------------------- batches

    private void invokeBatch(Message<?> delivered, Object input, Function<Object, @Nullable Object> target) {
        List<?> raw = (List<?>) delivered.getPayload();
        List<?> converted = payloadList(input);
        if (converted.size() != raw.size()) {
            throw new IllegalStateException("The batch function '" + beanName + "' received " + converted.size()
                    + " payloads for a batch of " + raw.size() + " messages");
        }
        List<Map<String, Object>> recordHeaders = recordHeaders(delivered, raw.size());
        List<InboundMessage> messages = new ArrayList<>(raw.size());
        for (int i = 0; i < raw.size(); i++) {
            Message<?> view = MessageBuilder.createMessage(converted.get(i), new MessageHeaders(recordHeaders.get(i)));
            messages.add(new SpringMessageInboundMessage(view, raw.get(i)));
        }
        int offset = 0;
        BusyHold hold = busyPolicy.start();
        while (true) {
            int from = offset;
            try {
                call(() -> executor.get().executeBatch(definition, messages.subList(from, messages.size()), indexes -> {
                    List<Integer> absolute = new ArrayList<>(indexes.size());
                    indexes.forEach(index -> absolute.add(index + from));
                    runBatch(input, absolute, from, target);
                }));
                return;
            } catch (BatchFailedException ex) {
                int failed = from + ex.index();
                if (held(hold, ex)) {
                    // The records before the busy one are done; claim again from the busy one.
                    offset = failed;
                    continue;
                }
                BatchFailedException absolute = stopping()
                        ? new BatchFailedException(
                                failed, new ListenerStoppingException(definition.consumer(), causeOf(ex)))
                        : failed == ex.index() ? ex : new BatchFailedException(failed, causeOf(ex));
                if (KAFKA_PRESENT && delivered.getHeaders().containsKey(KAFKA_BATCH_HEADERS)) {
                    throw KafkaBatchFailures.toKafka(absolute, "function '" + beanName + "'");
                }
                throw absolute;
            }
        }
    }

    /**
     * Calls the function with the records at {@code absolute}. A batch failure the function throws
     * (Sumi's {@link BatchFailedException} or Spring Kafka's {@code BatchListenerFailedException})
     * names a record of the list it received; it is translated to the list the executor was given.
     */
    private void runBatch(Object input, List<Integer> absolute, int from, Function<Object, @Nullable Object> target) {
        int size = payloadList(input).size();
        Object filtered = absolute.size() == size ? input : filter(input, size, absolute);
        try {
            // Batch bindings are consumers (a batch Function is refused at start-up): no result to send.
            Object unused = target.apply(filtered);
        } catch (RuntimeException ex) {
            int index = ex instanceof BatchFailedException failed
                    ? failed.index()
                    : KAFKA_PRESENT ? KafkaBatchFailures.failedIndex(ex) : -1;
            if (index < 0 || index >= absolute.size()) {
                throw ex;
            }
            // The function named a record of the list it saw; the executor counts in the list it was given.
            throw new BatchFailedException(absolute.get(index) - from, ex.getCause() != null ? ex.getCause() : ex);
        }
    }

    private static boolean isBatch(Message<?> delivered) {
        return delivered.getPayload() instanceof List<?>
                && (delivered.getHeaders().containsKey(KAFKA_BATCH_HEADERS)
                        || delivered.getHeaders().containsKey(RABBIT_BATCH_HEADERS));
    }

    /** The headers of each record of a batch, as the binder reports them. */
    @SuppressWarnings("unchecked")
    private static List<Map<String, Object>> recordHeaders(Message<?> delivered, int size) {
        Object value = delivered.getHeaders().get(KAFKA_BATCH_HEADERS);
        if (value == null) {
            value = delivered.getHeaders().get(RABBIT_BATCH_HEADERS);
        }
        List<Map<String, Object>> headers = new ArrayList<>(size);
        List<?> list = value instanceof List<?> l ? l : List.of();
        for (int i = 0; i < size; i++) {
            Object element = i < list.size() ? list.get(i) : null;
            headers.add(
                    element instanceof Map<?, ?> map
                            ? new LinkedHashMap<>((Map<String, Object>) map)
                            : new LinkedHashMap<>());
        }
        return headers;
    }

    private List<?> payloadList(Object input) {
        Object payload = input instanceof Message<?> message ? message.getPayload() : input;
        if (payload instanceof List<?> list) {
            return list;
        }
        throw new IllegalStateException(
                "The function '" + beanName + "' is bound to a batch binding (batch-mode) but takes "
                        + payload.getClass().getName() + ": declare its input as List<T> or Message<List<T>>");
    }

    /** The input with only the records at {@code indexes}: the list, or a message's list payload and its per-record list headers. */
    private static Object filter(Object input, int size, List<Integer> indexes) {
        if (input instanceof Message<?> message) {
            Map<String, Object> headers = new LinkedHashMap<>();
            message.getHeaders()
                    .forEach((name, value) -> headers.put(
                            name,
                            value instanceof List<?> values && values.size() == size ? pick(values, indexes) : value));
            return MessageBuilder.withPayload(pick((List<?>) message.getPayload(), indexes))
                    .copyHeaders(headers)
                    .build();
        }
        return pick((List<?>) input, indexes);
    }

    private static <T> List<T> pick(List<T> list, List<Integer> indexes) {
        List<T> picked = new ArrayList<>(indexes.size());
        for (int index : indexes) {
            picked.add(list.get(index));
        }
        return picked;
    }

    // ---------------------------------------------------------------- helpers

    private Message<?> deliveredMessage(Object input) {
        InboundMessages.Frame frame = InboundMessages.current();
        if (frame != null) {
            if (input instanceof Message<?> own
                    && own != frame.message()
                    && !isBatch(frame.message())
                    && !isBatch(own)
                    && !sameKey(frame.message(), own)) {
                // Another function (the one the binding invokes) called this one with a message of its
                // own, e.g. one per line of an order: guard that message, not the delivered one, or
                // every line would carry the order's key and all but the first be skipped.
                return own;
            }
            return frame.message();
        }
        if (input instanceof Message<?> message) {
            return message;
        }
        throw new IllegalStateException(
                "The @IdempotentHandler function '" + beanName + "' was called with a bare payload"
                        + " outside a Spring Cloud Stream input binding, so the message's key headers are unknown. Bind it with"
                        + " Spring Cloud Stream with Sumi's SumiStreamChannelInterceptor registered (the starter does), or declare"
                        + " its input as Message<T>");
    }

    /** Whether {@code own} has the key the delivered message has (always so when the binding invokes this function). */
    private boolean sameKey(Message<?> delivered, Message<?> own) {
        try {
            MessageKeyResolver resolver = executor.get().keyResolver();
            return resolver.resolve(definition, new SpringMessageInboundMessage(viewOf(delivered, own.getPayload())))
                    .equals(resolver.resolve(definition, new SpringMessageInboundMessage(own)));
        } catch (RuntimeException ex) {
            return true; // a key error: reported on the delivered message, as before
        }
    }

    private static Object payloadOf(Object input) {
        return input instanceof Message<?> message ? message.getPayload() : input;
    }

    private static Message<?> viewOf(Message<?> delivered, Object payload) {
        return payload == delivered.getPayload()
                ? delivered
                : MessageBuilder.createMessage(payload, delivered.getHeaders());
    }

    private <T> T retryingWhileBusy(Callable<T> call) {
        BusyHold hold = busyPolicy.start();
        while (true) {
            try {
                return call(call);
            } catch (MessageBusyException | ReconciliationRequiredException | LedgerUnavailableException ex) {
                if (!held(hold, ex)) {
                    throw ex;
                }
            }
        }
    }

    /**
     * Whether the busy policy keeps {@code refusal}'s message on this thread for another claim (it
     * has waited one retry interval then); {@code false}: hand the refusal to the binder.
     */
    private boolean held(BusyHold hold, RuntimeException refusal) {
        if (!hold.retry(refusal, this::holding)) {
            return false;
        }
        log.debug(
                "A message of consumer '{}' {}; claimed again after {} (run {} in place)",
                definition.consumer(),
                holdReason(refusal),
                busyPolicy.retryInterval(),
                hold.retries() + 1);
        return true;
    }

    /** Why {@code refusal}'s message is held, for the log: a busy key and an unreachable ledger read alike otherwise. */
    private static String holdReason(RuntimeException refusal) {
        Throwable cause =
                refusal instanceof BatchFailedException batch && batch.getCause() != null ? batch.getCause() : refusal;
        Verdict verdict = Verdict.of(cause);
        if (verdict == Verdict.LEDGER_UNAVAILABLE) {
            return "is held while the ledger is unavailable (Sumi could not write its claim or completion)";
        }
        if (verdict == Verdict.RECONCILE) {
            return "awaits reconciliation";
        }
        return "is held by another consumer (its key is busy)";
    }

    /**
     * Whether a held message stays held: the application runs and the container delivering it (if
     * the binder says which) was not asked to stop.
     */
    private boolean holding() {
        return running.getAsBoolean() && !DeliveringContainer.stopping();
    }

    /**
     * Whether the container delivering this message was asked to stop, or the application closes:
     * known only where the binder says which container delivers ({@link DeliveringContainer}).
     */
    private boolean stopping() {
        return DeliveringContainer.known() && (DeliveringContainer.stopping() || !running.getAsBoolean());
    }

    /**
     * {@code failure}, or, when the container stops, a {@link ListenerStoppingException} with it as
     * the cause: the message is left unsettled, for the restart, instead of being retried or
     * dead-lettered by the binder.
     */
    private RuntimeException interrupted(RuntimeException failure) {
        return stopping() && !(failure instanceof ListenerStoppingException)
                ? new ListenerStoppingException(definition.consumer(), failure)
                : failure;
    }

    private static Throwable causeOf(BatchFailedException ex) {
        return ex.getCause() != null ? ex.getCause() : ex;
    }

    private static <T> T call(Callable<T> call) {
        try {
            return call.call();
        } catch (RuntimeException | Error ex) {
            throw ex;
        } catch (Exception ex) {
            throw new UndeclaredThrowableException(ex);
        }
    }
}
