package io.sumi.stream.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.rabbitmq.client.Channel;
import io.sumi.consumer.FingerprintMismatchPolicy;
import io.sumi.consumer.HandlerDefaults;
import io.sumi.consumer.HandlerDefinition;
import io.sumi.consumer.IdempotencyContext;
import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentExecutor;
import io.sumi.consumer.IdempotentHandler;
import io.sumi.consumer.exception.ListenerStoppingException;
import io.sumi.consumer.exception.MessageBusyException;
import io.sumi.store.ClaimOutcome;
import io.sumi.store.ClaimRequest;
import io.sumi.store.MessageStatus;
import io.sumi.store.ProcessedMessageStore;
import io.sumi.store.jdbc.JdbcProcessedMessageStore;
import io.sumi.stream.IdempotentFunctionPostProcessor;
import io.sumi.stream.StreamSettings;
import io.sumi.testing.TestDatabase;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.amqp.support.AmqpHeaders;
import org.springframework.core.annotation.AnnotationUtils;
import org.springframework.messaging.Message;
import org.springframework.messaging.support.MessageBuilder;

/**
 * Issue 8, defect 4 on the Spring Cloud Stream side: the message the binder delivered on this
 * thread must not win over the message an idempotent function is called with by another function.
 */
class IdempotentInvokerTests {

    private final ProcessedMessageStore store = JdbcProcessedMessageStore.builder(TestDatabase.POSTGRESQL.dataSource())
            .build();
    private final IdempotentExecutor executor =
            IdempotentExecutor.builder(store).build();
    private final String consumer = "lines-" + UUID.randomUUID();

    @AfterEach
    void popFrame() {
        if (InboundMessages.current() != null) {
            InboundMessages.pop();
        }
        DeliveringContainer.clear();
    }

    @IdempotentHandler(mode = IdempotencyMode.LEASE)
    private static void annotated() {}

    @IdempotentHandler(mode = IdempotencyMode.LEASE, storeReply = true)
    private static void replying() {}

    private IdempotentInvoker invoker() throws Exception {
        return invoker(StreamSettings.ofDefaults());
    }

    private IdempotentInvoker invoker(StreamSettings settings) throws Exception {
        return new IdempotentInvoker("lines", definition("annotated"), () -> executor, settings.busyPolicy());
    }

    /** An invoker of a function that keeps its replies (storeReply), replies read back as String. */
    private IdempotentInvoker replyingInvoker() throws Exception {
        return new IdempotentInvoker(
                "lines",
                definition("replying"),
                () -> executor,
                StreamSettings.ofDefaults().busyPolicy(),
                new IdempotentInvoker.Replies(IdempotentFunctionPostProcessor.replyCodec(), String.class));
    }

    private HandlerDefinition definition(String method) throws Exception {
        IdempotentHandler annotation =
                AnnotationUtils.findAnnotation(getClass().getDeclaredMethod(method), IdempotentHandler.class);
        return new HandlerDefaults(
                        IdempotencyMode.AUTO,
                        Duration.ofSeconds(30),
                        FingerprintMismatchPolicy.WARN,
                        HandlerDefinition.DEFAULT_KEY_HEADERS)
                .resolve(annotation, consumer, false, "test");
    }

    /**
     * Issue 19, B: the Stream binder holds a busy key under the core's BusyPolicy, so a key whose
     * holder died is kept on the thread until that lease has ended, however short busy-max-wait is
     * (it used to go to the binder after busy-max-wait, and from there to the dead-letter
     * destination or a quorum queue's delivery limit, while the lease lived).
     */
    @Test
    void aKeyHeldByADeadInstanceIsHeldUntilItsLeaseEndedNotJustBusyMaxWait() throws Exception {
        IdempotentInvoker invoker = invoker(
                new StreamSettings(Duration.ofMillis(50), Duration.ofMillis(100), StreamSettings.DEFAULT_KEY_HEADER));
        String key = "held-" + UUID.randomUUID();
        assertThat(store.claim(consumer, new ClaimRequest(key, null), Duration.ofSeconds(2))
                        .outcome())
                .isEqualTo(ClaimOutcome.CLAIMED);
        List<String> runs = new ArrayList<>();

        invoker.invoke(
                MessageBuilder.withPayload("x")
                        .setHeader("idempotency-key", key)
                        .build(),
                input -> runs.add(IdempotencyContext.current().key()));

        assertThat(runs).as("taken over once the dead holder's lease ended").containsExactly(key);
        assertThat(store.find(consumer, key))
                .get()
                .extracting(row -> row.status())
                .isEqualTo(MessageStatus.COMPLETED);
    }

    private static Message<String> keyed(String key) {
        return MessageBuilder.withPayload("x").setHeader("idempotency-key", key).build();
    }

    /**
     * Issue 19, LEDGER_DOWN_DURING_SHUTDOWN on Stream Kafka: the hold in place ended only when the
     * application closed, not when the message's container (its binding) stopped, so the stopped
     * consumer stayed in its group while the ledger (here: a live claim) kept refusing. The hold
     * ends with the container's stop, and the message is left unsettled, not handed to the
     * binder's retry and DLQ.
     */
    @Test
    void aHeldMessageIsLeftUnsettledWhenItsContainerStops() throws Exception {
        IdempotentInvoker invoker = invoker(
                new StreamSettings(Duration.ofMillis(10), Duration.ofMinutes(5), StreamSettings.DEFAULT_KEY_HEADER));
        String key = "held-" + UUID.randomUUID();
        assertThat(store.claim(consumer, new ClaimRequest(key, null), Duration.ofSeconds(30))
                        .outcome())
                .isEqualTo(ClaimOutcome.CLAIMED);
        AtomicInteger asked = new AtomicInteger();
        // Running when the message arrives; asked to stop by the time the hold asks.
        DeliveringContainer.bind(() -> asked.incrementAndGet() == 1);
        List<String> runs = new ArrayList<>();

        assertThatThrownBy(() -> invoker.invoke(keyed(key), input -> runs.add("ran")))
                .isInstanceOf(ListenerStoppingException.class)
                .hasCauseInstanceOf(MessageBusyException.class);
        assertThat(runs).isEmpty();
    }

    /** Issue 19, STOP_RESTART_MID_BATCH: the binder's retry of an interrupted message (or the rest of a poll) does not run it. */
    @Test
    void aMessageDeliveredWhileItsContainerStopsIsNotRun() throws Exception {
        IdempotentInvoker invoker = invoker();
        DeliveringContainer.bind(() -> false);
        String key = "late-" + UUID.randomUUID();
        List<String> runs = new ArrayList<>();

        assertThatThrownBy(() -> invoker.invoke(keyed(key), input -> runs.add("ran")))
                .isInstanceOf(ListenerStoppingException.class)
                .hasNoCause();
        assertThat(runs).isEmpty();
        assertThat(store.find(consumer, key)).as("not claimed").isEmpty();
    }

    /**
     * Issue 19, STOP_RESTART_MID_BATCH: a failure while the container stops (the work cut short by
     * the stop) was retried in place by the binder, then dead-lettered; it is left unsettled, for the
     * restart. A failure while the container runs is the function's own, unchanged.
     */
    @Test
    void aFailureWhileItsContainerStopsIsLeftUnsettled() throws Exception {
        IdempotentInvoker invoker = invoker();
        AtomicBoolean running = new AtomicBoolean(true);
        DeliveringContainer.bind(running::get);
        IllegalStateException cutShort = new IllegalStateException("cut short by the stop");
        String key = "cut-" + UUID.randomUUID();

        assertThatThrownBy(() -> invoker.invoke(keyed(key), input -> {
                    running.set(false);
                    throw cutShort;
                }))
                .isInstanceOf(ListenerStoppingException.class)
                .hasCause(cutShort);
        assertThat(store.find(consumer, key).map(row -> row.status()))
                .as("released, not completed: the redelivery claims and runs it")
                .isNotEqualTo(Optional.of(MessageStatus.COMPLETED));

        running.set(true);
        IllegalStateException own = new IllegalStateException("smtp down");
        assertThatThrownBy(() -> invoker.invoke(keyed(key), input -> {
                    throw own;
                }))
                .isSameAs(own);
    }

    @Test
    void aFunctionFanningOutToAnIdempotentFunctionGuardsEachSubMessageByItsOwnKey() throws Exception {
        IdempotentInvoker lines = invoker();
        InboundMessages.push(MessageBuilder.withPayload("order")
                .setHeader("idempotency-key", "order-1")
                .build());
        List<String> keys = new ArrayList<>();

        for (int i = 0; i < 3; i++) {
            Message<String> line = MessageBuilder.withPayload("line " + i)
                    .setHeader("idempotency-key", "order-1/line-" + i)
                    .build();
            lines.invoke(line, input -> keys.add(IdempotencyContext.current().key()));
        }

        assertThat(keys).containsExactly("order-1/line-0", "order-1/line-1", "order-1/line-2");
        assertThat(store.find(consumer, "order-1/line-1"))
                .get()
                .extracting(row -> row.status())
                .isEqualTo(MessageStatus.COMPLETED);
        assertThat(store.find(consumer, "order-1")).isEmpty();
    }

    @Test
    void theFunctionTheBindingInvokesIsGuardedByTheDeliveredMessage() throws Exception {
        IdempotentInvoker lines = invoker();
        Message<byte[]> delivered = MessageBuilder.withPayload("x".getBytes())
                .setHeader("idempotency-key", "d-1")
                .build();
        InboundMessages.push(delivered);
        List<String> keys = new ArrayList<>();

        // As Spring Cloud Function passes it: the converted payload, or a converted message with the same headers.
        lines.invoke("x", input -> keys.add(IdempotencyContext.current().key()));
        lines.invoke(
                MessageBuilder.withPayload("x")
                        .copyHeaders(delivered.getHeaders())
                        .build(),
                input -> keys.add("ran again"));

        assertThat(keys).containsExactly("d-1");
    }

    // ---------------------------------------------------------------- MANUAL acknowledgement, Rabbit binder

    /** A channel that records what reaches it (the broker's side of a MANUAL binding's channel). */
    private static final class RecordingChannel implements InvocationHandler {

        final List<String> calls = new CopyOnWriteArrayList<>();
        final Channel channel =
                (Channel) Proxy.newProxyInstance(Channel.class.getClassLoader(), new Class<?>[] {Channel.class}, this);

        @Override
        public @Nullable Object invoke(Object proxy, Method method, @Nullable Object @Nullable [] args) {
            if (method.getDeclaringClass() == Object.class) {
                return method.getName().equals("equals")
                        ? proxy == args[0]
                        : method.getName().equals("hashCode") ? 0 : "recording";
            }
            calls.add(method.getName() + Arrays.toString(args));
            return null;
        }
    }

    /** A message as the Rabbit binder delivers it on a MANUAL binding: the channel and the delivery tag in headers. */
    private static Message<String> manualDelivery(String key, Channel channel, long tag) {
        return MessageBuilder.withPayload("x")
                .setHeader("idempotency-key", key)
                .setHeader(AmqpHeaders.CHANNEL, channel)
                .setHeader(AmqpHeaders.DELIVERY_TAG, tag)
                .build();
    }

    /** The function's own settlement through the channel header it was given. */
    private static Channel channelOf(Object input) {
        return ((Message<?>) input).getHeaders().get(AmqpHeaders.CHANNEL, Channel.class);
    }

    /**
     * Issue 19, A3/A8 on the Stream Rabbit binder: the duplicate Sumi skips on a MANUAL binding was
     * never acknowledged (the function that would have acked it never runs), so the binding's
     * prefetch filled up and it stalled. Sumi acknowledges it by its own tag; the function's ack of
     * the first copy reaches the channel only after the completion is written.
     */
    @Test
    void aDuplicateOnAManualRabbitBindingIsAcknowledgedBySumiByItsOwnTag() throws Exception {
        IdempotentInvoker invoker = invoker();
        RecordingChannel broker = new RecordingChannel();
        String key = "manual-" + UUID.randomUUID();
        List<String> seenInside = new ArrayList<>();

        invoker.invoke(manualDelivery(key, broker.channel, 1), input -> {
            try {
                channelOf(input).basicAck(1, false);
            } catch (IOException ex) {
                throw new UncheckedIOException(ex);
            }
            seenInside.addAll(broker.calls);
            return null;
        });
        invoker.invoke(manualDelivery(key, broker.channel, 2), input -> {
            throw new AssertionError("a duplicate ran");
        });

        assertThat(seenInside)
                .as("the function's ack, held until the completion")
                .isEmpty();
        assertThat(broker.calls).containsExactly("basicAck[1, false]", "basicAck[2, false]");
    }

    /**
     * Issue 19, A3 on the Stream Rabbit binder: the function's own basicNack / basicReject through
     * the amqp_channel header was not seen, so the row was completed and the redelivery the nack
     * asked for was skipped as a duplicate. A nacked or rejected message is not done: released,
     * the nack passed on, and the redelivery runs.
     */
    @Test
    void aNackOrRejectOnAManualRabbitBindingLeavesTheRowNotCompletedAndTheRedeliveryRuns() throws Exception {
        IdempotentInvoker invoker = invoker();
        RecordingChannel broker = new RecordingChannel();
        String nacked = "nack-" + UUID.randomUUID();
        String rejected = "reject-" + UUID.randomUUID();

        invoker.invoke(manualDelivery(nacked, broker.channel, 1), input -> {
            try {
                channelOf(input).basicNack(1, false, true);
            } catch (IOException ex) {
                throw new UncheckedIOException(ex);
            }
            return null;
        });
        invoker.invoke(manualDelivery(rejected, broker.channel, 2), input -> {
            try {
                channelOf(input).basicReject(2, true);
            } catch (IOException ex) {
                throw new UncheckedIOException(ex);
            }
            return null;
        });

        assertThat(store.find(consumer, nacked))
                .map(row -> row.status())
                .isNotEqualTo(Optional.of(MessageStatus.COMPLETED));
        assertThat(store.find(consumer, rejected))
                .map(row -> row.status())
                .isNotEqualTo(Optional.of(MessageStatus.COMPLETED));
        assertThat(broker.calls).containsExactly("basicNack[1, false, true]", "basicReject[2, true]");

        List<String> runs = new ArrayList<>();
        invoker.invoke(manualDelivery(nacked, broker.channel, 3), input -> {
            runs.add(IdempotencyContext.current().key());
            try {
                channelOf(input).basicAck(3, false);
            } catch (IOException ex) {
                throw new UncheckedIOException(ex);
            }
            return null;
        });
        assertThat(runs).as("the redelivery of the nacked message").containsExactly(nacked);
        assertThat(store.find(consumer, nacked))
                .get()
                .extracting(row -> row.status())
                .isEqualTo(MessageStatus.COMPLETED);
        assertThat(broker.calls).endsWith("basicAck[3, false]");
    }

    /**
     * A function that acked and then failed: its held ack is not passed on, since the binder's
     * error handling settles the delivery (the republish to the DLQ acks it; a second ack of the
     * tag would close the channel).
     */
    @Test
    void aFailedRunOnAManualRabbitBindingPassesNothingOn() throws Exception {
        IdempotentInvoker invoker = invoker();
        RecordingChannel broker = new RecordingChannel();
        String key = "failed-" + UUID.randomUUID();

        assertThatThrownBy(() -> invoker.invoke(manualDelivery(key, broker.channel, 1), input -> {
                    try {
                        channelOf(input).basicAck(1, false);
                    } catch (IOException ex) {
                        throw new UncheckedIOException(ex);
                    }
                    throw new IllegalStateException("failed after its ack");
                }))
                .isInstanceOf(IllegalStateException.class);

        assertThat(broker.calls).isEmpty();
    }

    /**
     * A function that keeps its replies, on a MANUAL Rabbit binding: its path did not go through
     * the settling channel, so it ran, its duplicate was never acknowledged (the binding stalls at
     * its prefetch) and its nack was not seen (the row was completed). Refused at its first
     * delivery, before anything is claimed, naming the function and the fix.
     */
    @Test
    void aFunctionKeepingItsRepliesOnAManualRabbitBindingIsRefusedBeforeAnythingIsClaimed() throws Exception {
        IdempotentInvoker invoker = replyingInvoker();
        RecordingChannel broker = new RecordingChannel();
        String key = "reply-" + UUID.randomUUID();
        AtomicInteger runs = new AtomicInteger();

        assertThatThrownBy(() -> invoker.invoke(manualDelivery(key, broker.channel, 1), input -> {
                    runs.incrementAndGet();
                    return "reply";
                }))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("'lines'")
                .hasMessageContaining("storeReply")
                .hasMessageContaining("acknowledge-mode MANUAL")
                .hasMessageContaining("AUTO");

        assertThat(runs).hasValue(0);
        assertThat(store.find(consumer, key)).as("nothing claimed").isEmpty();
        assertThat(broker.calls).isEmpty();
    }

    /** The same function on an AUTO binding (no channel header) keeps its reply as before. */
    @Test
    void aFunctionKeepingItsRepliesOnAnAutoRabbitBindingRuns() throws Exception {
        IdempotentInvoker invoker = replyingInvoker();
        String key = "reply-auto-" + UUID.randomUUID();
        Message<String> delivery = MessageBuilder.withPayload("x")
                .setHeader("idempotency-key", key)
                .build();

        assertThat(invoker.invoke(delivery, input -> "reply")).isEqualTo("reply");
        assertThat(invoker.invoke(delivery, input -> {
                    throw new AssertionError("a duplicate ran");
                }))
                .isEqualTo("reply");
    }

    /**
     * A batch on a MANUAL Rabbit binding: the batch path did not go through the settling channel
     * either (duplicates never acknowledged, nacks not seen). Refused before anything is claimed.
     */
    @Test
    void aBatchOnAManualRabbitBindingIsRefusedBeforeAnythingIsClaimed() throws Exception {
        IdempotentInvoker invoker = invoker();
        RecordingChannel broker = new RecordingChannel();
        String first = "batch-" + UUID.randomUUID();
        String second = "batch-" + UUID.randomUUID();
        Message<List<String>> batch = MessageBuilder.withPayload(List.of("a", "b"))
                .setHeader(
                        IdempotentInvoker.RABBIT_BATCH_HEADERS,
                        List.of(Map.of("idempotency-key", first), Map.of("idempotency-key", second)))
                .setHeader(AmqpHeaders.CHANNEL, broker.channel)
                .setHeader(AmqpHeaders.DELIVERY_TAG, 2L)
                .build();
        AtomicInteger runs = new AtomicInteger();

        assertThatThrownBy(() -> invoker.invoke(batch, input -> {
                    runs.incrementAndGet();
                    return null;
                }))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("'lines'")
                .hasMessageContaining("batch")
                .hasMessageContaining("acknowledge-mode MANUAL");

        assertThat(runs).hasValue(0);
        assertThat(store.find(consumer, first)).as("nothing claimed").isEmpty();
        assertThat(store.find(consumer, second)).as("nothing claimed").isEmpty();
        assertThat(broker.calls).isEmpty();
    }
}
