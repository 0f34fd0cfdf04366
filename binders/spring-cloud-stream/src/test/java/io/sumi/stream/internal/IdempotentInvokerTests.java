package io.sumi.stream.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

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
import io.sumi.stream.StreamSettings;
import io.sumi.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
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

    private IdempotentInvoker invoker() throws Exception {
        return invoker(StreamSettings.ofDefaults());
    }

    private IdempotentInvoker invoker(StreamSettings settings) throws Exception {
        IdempotentHandler annotation =
                AnnotationUtils.findAnnotation(getClass().getDeclaredMethod("annotated"), IdempotentHandler.class);
        HandlerDefinition definition = new HandlerDefaults(
                        IdempotencyMode.AUTO,
                        Duration.ofSeconds(30),
                        FingerprintMismatchPolicy.WARN,
                        HandlerDefinition.DEFAULT_KEY_HEADERS)
                .resolve(annotation, consumer, false, "test");
        return new IdempotentInvoker("lines", definition, () -> executor, settings);
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
}
