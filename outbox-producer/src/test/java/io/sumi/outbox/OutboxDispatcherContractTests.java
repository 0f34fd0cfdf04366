package io.sumi.outbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.sumi.consumer.HandlerDefinition;
import io.sumi.consumer.HandlerResult;
import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentExecutor;
import io.sumi.consumer.InboundMessage;
import io.sumi.consumer.MessageOutcome;
import io.sumi.store.jdbc.JdbcProcessedMessageStore;
import io.sumi.testing.MutableClock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The dispatcher: claim, send, mark; retries, parking, ordering, leases, retrofit switches,
 * retention, metrics, and two dispatchers racing on one table. Run on every database by
 * {@link OutboxDispatcherIntegrationTests} (the database its class parameter), and on H2 through
 * the RabbitMQ publisher by {@link RabbitOutboxDispatcherIntegrationTests}.
 */
abstract class OutboxDispatcherContractTests extends OutboxDispatcherFixture {

    // ---------------------------------------------------------------- the round

    @Test
    void aRoundSendsDueRowsWithTheirKeyAndHeadersAndMarksThemDispatched() {
        long id = append(OutboxMessage.builder("order-1", "mail.send", "{\"to\":\"a@example.com\"}")
                .schemaVersion("2")
                .tenant("acme")
                .traceId("trace-1")
                .header("x-custom", "v")
                .build());
        clock.advance(Duration.ofMillis(250));
        OutboxDispatcher dispatcher = dispatcher(publisher).build();

        DispatchResult result = dispatcher.dispatchOnce();

        assertThat(result).isEqualTo(new DispatchResult(1, 1, 0, 0, 0, 0));
        OutboxRecord sent = publisher.sent().get(0);
        assertThat(sent.id()).isEqualTo(id);
        assertThat(sent.aggregateId()).isEqualTo("order-1");
        assertThat(sent.topic()).isEqualTo("mail.send");
        assertThat(sent.payload()).isEqualTo("{\"to\":\"a@example.com\"}");
        assertThat(sent.brokerHeaders())
                .containsExactly(
                        Map.entry(OutboxHeaders.OUTBOX_ID, Long.toString(id)),
                        Map.entry(OutboxHeaders.SCHEMA_VERSION, "2"),
                        Map.entry(OutboxHeaders.TENANT_ID, "acme"),
                        Map.entry(OutboxHeaders.TRACE_ID, "trace-1"),
                        Map.entry("x-custom", "v"));
        OutboxRecord row = row(id);
        assertThat(row.dispatchedAt()).isEqualTo(clock.instant());
        assertThat(row.outcome()).isEqualTo(DispatchOutcome.SENT);
        assertThat(row.pending()).isFalse();
        assertThat(meters.get("outbox.dispatch.latency")
                        .tag("topic", "mail.send")
                        .timer()
                        .totalTime(java.util.concurrent.TimeUnit.MILLISECONDS))
                .isEqualTo(250.0);
        assertThat(meters.get("outbox.attempts")
                        .tag("topic", "mail.send")
                        .summary()
                        .max())
                .isEqualTo(1.0);
        assertThat(counter("outbox.dispatched", "topic", "mail.send", "outcome", "sent"))
                .isEqualTo(1);

        assertThat(dispatcher.dispatchOnce()).isEqualTo(DispatchResult.NOTHING);
        assertThat(publisher.sent()).hasSize(1);
    }

    @Test
    void aDelayedRowIsSentOnlyOnceItIsDue() {
        long id = append(OutboxMessage.builder("user-1", "mail.welcome", "{}")
                .delay(Duration.ofMinutes(3))
                .build());
        OutboxDispatcher dispatcher = dispatcher(publisher).build();

        assertThat(dispatcher.dispatchOnce().claimed()).isZero();
        clock.advance(Duration.ofMinutes(3).minusSeconds(1));
        assertThat(dispatcher.dispatchOnce().claimed()).isZero();
        clock.advance(Duration.ofSeconds(1));
        assertThat(dispatcher.dispatchOnce().sent()).isOne();
        assertThat(publisher.sentIds()).containsExactly(id);
    }

    @Test
    void aBatchTakesAtMostTheBatchSizeInIdOrder() {
        List<Long> ids = tx.execute(status -> outbox.appendAll(IntStream.range(0, 7)
                .mapToObj(i -> OutboxMessage.of("agg-" + i, "t", "p" + i))
                .toList()));
        OutboxDispatcher dispatcher = dispatcher(publisher).batchSize(3).build();

        assertThat(dispatcher.dispatchOnce().sent()).isEqualTo(3);
        assertThat(dispatcher.dispatchOnce().sent()).isEqualTo(3);
        assertThat(dispatcher.dispatchOnce().sent()).isEqualTo(1);
        assertThat(publisher.sentIds()).containsExactlyElementsOf(ids);
    }

    // ---------------------------------------------------------------- failures

    @Test
    void aFailedSendIsRetriedWithBackoffAndThenSucceeds() {
        long id = append("order-2", "stripe.charge", "{\"amount\":100}");
        AtomicInteger failuresLeft = new AtomicInteger(2);
        publisher.failWith(
                record -> failuresLeft.getAndDecrement() > 0 ? new IllegalStateException("broker unavailable") : null);
        OutboxDispatcher dispatcher = dispatcher(publisher).build();

        assertThat(dispatcher.dispatchOnce()).isEqualTo(new DispatchResult(1, 0, 0, 0, 1, 0));
        OutboxRecord afterFirst = row(id);
        assertThat(afterFirst.attempts()).isEqualTo(1);
        assertThat(afterFirst.lastError()).isEqualTo("java.lang.IllegalStateException: broker unavailable");
        assertThat(afterFirst.availableAt()).isEqualTo(clock.instant().plusSeconds(30));
        assertThat(afterFirst.pending()).isTrue();

        assertThat(dispatcher.dispatchOnce().claimed())
                .as("waits out the backoff")
                .isZero();
        clock.advance(Duration.ofSeconds(29));
        assertThat(dispatcher.dispatchOnce().claimed()).isZero();
        clock.advance(Duration.ofSeconds(1));
        assertThat(dispatcher.dispatchOnce().failed()).isOne();
        assertThat(row(id).attempts()).isEqualTo(2);
        assertThat(row(id).availableAt())
                .as("the backoff doubles")
                .isEqualTo(clock.instant().plusSeconds(60));

        clock.advance(Duration.ofSeconds(60));
        assertThat(dispatcher.dispatchOnce().sent()).isOne();
        OutboxRecord done = row(id);
        assertThat(done.outcome()).isEqualTo(DispatchOutcome.SENT);
        assertThat(done.attempts()).isEqualTo(2);
        assertThat(publisher.attempted).hasSize(3);
        assertThat(meters.get("outbox.attempts")
                        .tag("topic", "stripe.charge")
                        .summary()
                        .max())
                .isEqualTo(3.0);
        assertThat(counter("outbox.send.failures", "topic", "stripe.charge")).isEqualTo(2);
    }

    @Test
    void aPublisherThatThrowsFailsTheWholeBatch() {
        append("a", "t", "1");
        append("b", "t", "2");
        OutboxDispatcher dispatcher = dispatcher(records -> {
                    throw new IllegalStateException("producer closed");
                })
                .build();

        assertThat(dispatcher.dispatchOnce()).isEqualTo(new DispatchResult(2, 0, 0, 0, 2, 0));
        assertThat(jdbc.queryForList("SELECT last_error FROM outbox", String.class))
                .containsOnly("java.lang.IllegalStateException: producer closed");
    }

    @Test
    void pastTheAttemptLimitARowIsParkedCountedAndCanBeRedriven() {
        long id = append("order-3", "mail.send", "{}");
        publisher.failWith(record -> new IllegalArgumentException("record too large"));
        OutboxMetrics gauges = new OutboxMetrics(table, Duration.ZERO);
        gauges.bindTo(meters);
        OutboxDispatcher dispatcher = dispatcher(publisher).maxAttempts(3).build();

        for (int attempt = 1; attempt <= 2; attempt++) {
            assertThat(dispatcher.dispatchOnce().failed()).isOne();
            clock.advance(Duration.ofMinutes(15));
        }
        assertThat(dispatcher.dispatchOnce()).isEqualTo(new DispatchResult(1, 0, 0, 0, 0, 1));

        OutboxRecord parked = row(id);
        assertThat(parked.parked()).isTrue();
        assertThat(parked.parkedAt()).isEqualTo(clock.instant());
        assertThat(parked.attempts()).isEqualTo(3);
        assertThat(parked.lastError()).contains("record too large");
        assertThat(table.stats()).satisfies(stats -> {
            assertThat(stats.parked()).isEqualTo(1);
            assertThat(stats.pending()).isZero();
        });
        assertThat(table.parked(10)).extracting(OutboxRecord::id).containsExactly(id);
        assertThat(meters.get("outbox.parked").gauge().value()).isEqualTo(1.0);
        assertThat(meters.get("outbox.pending.total").gauge().value()).isZero();
        assertThat(counter("outbox.rows.parked", "topic", "mail.send")).isEqualTo(1);

        clock.advance(Duration.ofDays(1));
        assertThat(dispatcher.dispatchOnce().claimed())
                .as("a parked row is not retried")
                .isZero();

        publisher.failWith(record -> null);
        assertThat(table.redrive(id)).isTrue();
        assertThat(table.redrive(id)).as("no longer parked").isFalse();
        assertThat(row(id).attempts()).isZero();
        assertThat(dispatcher.dispatchOnce().sent()).isOne();
        assertThat(row(id).outcome()).isEqualTo(DispatchOutcome.SENT);
        assertThat(meters.get("outbox.parked").gauge().value()).isZero();
    }

    @Test
    void parkedRowsCanBeRedrivenByTopic() {
        long mail = append("a", "mail.send", "{}");
        long charge = append("b", "stripe.charge", "{}");
        publisher.failWith(record -> new IllegalStateException("down"));
        OutboxDispatcher dispatcher = dispatcher(publisher).maxAttempts(1).build();
        assertThat(dispatcher.dispatchOnce().parked()).isEqualTo(2);

        assertThat(table.redriveParked("mail.send")).isOne();
        assertThat(row(mail).parked()).isFalse();
        assertThat(row(charge).parked()).isTrue();
        assertThat(table.redriveParked(null)).isOne();
        assertThat(table.stats().parked()).isZero();
    }

    // ---------------------------------------------------------------- error texts the column cannot hold

    /**
     * Publisher failures whose text {@code last_error} cannot hold as it is: a NUL byte (PostgreSQL
     * refuses it in any text column), a 4-byte character (a MariaDB {@code utf8mb3} column refuses
     * it), and a text far longer than the column, cut where a surrogate pair straddles the limit.
     */
    static List<String> unstorableErrors() {
        return List.of(
                "reply held a NUL byte \u0000 here",
                "broker said \uD83D\uDE00 no",
                "x".repeat(960) + "\uD83D\uDE00".repeat(30) + "y".repeat(5000));
    }

    @ParameterizedTest
    @MethodSource("unstorableErrors")
    void anErrorTextTheColumnCannotHoldFailsOnlyItsRowAndTheOthersAreMarkedOnce(String message) {
        assertUnstorableErrorFailsOnlyItsRow(table, "outbox", message);
    }

    // ---------------------------------------------------------------- several brokers

    /**
     * Issue 19 A10. Topic "orders" goes to a Kafka that is slow (it answers no send within the
     * batch's timeout), "mail.send" to a RabbitMQ that is healthy: it acknowledges once the slow one
     * holds its share of the batch (as it does when both are sent at the same time), and needs up
     * to a second for that. Sent one after the other, the healthy broker would either wait for the
     * slow one's share for its whole timeout, or get what time the slow one left: none. The
     * RabbitMQ row is dispatched; only the Kafka rows count attempts and park.
     */
    @Test
    void aSlowBrokerDoesNotFailTheRowsOfAHealthyOneInTheSameBatch() {
        long kafkaRow = append("a", "orders", "1");
        long rabbitRow = append("b", "mail.send", "2");
        long otherKafkaRow = append("c", "orders", "3");
        java.util.concurrent.CountDownLatch slowHoldsItsShare = new java.util.concurrent.CountDownLatch(1);
        OutboxPublisher slowKafka = new OutboxPublisher() {
            @Override
            public PublishResult publish(List<OutboxRecord> records) {
                throw new AssertionError("the dispatcher always gives a timeout");
            }

            @Override
            public PublishResult publish(List<OutboxRecord> records, Duration timeout) {
                // No acknowledgement comes: wait out the timeout, as the Kafka producer does.
                slowHoldsItsShare.countDown();
                try {
                    new java.util.concurrent.CountDownLatch(1).await(timeout.toNanos(), TimeUnit.NANOSECONDS);
                } catch (InterruptedException ex) {
                    Thread.currentThread().interrupt();
                }
                return failAll(records, new java.util.concurrent.TimeoutException("no ack from Kafka"));
            }
        };
        RecordingPublisher healthyRabbit = new RecordingPublisher() {
            @Override
            public PublishResult publish(List<OutboxRecord> records, Duration timeout) {
                if (timeout.compareTo(Duration.ofSeconds(1)) < 0) {
                    return failAll(records, new java.util.concurrent.TimeoutException("no time left to send"));
                }
                try {
                    if (!slowHoldsItsShare.await(timeout.toNanos(), TimeUnit.NANOSECONDS)) {
                        return failAll(records, new java.util.concurrent.TimeoutException("timed out"));
                    }
                } catch (InterruptedException ex) {
                    Thread.currentThread().interrupt();
                    return failAll(records, ex);
                }
                return super.publish(records);
            }
        };
        OutboxDispatcher dispatcher = dispatcher(
                        TopicRoutingPublisher.of(Map.of("mail.send", healthyRabbit), slowKafka))
                .sendTimeout(Duration.ofSeconds(3))
                .maxAttempts(1)
                .build();

        assertThat(dispatcher.dispatchOnce()).isEqualTo(new DispatchResult(3, 1, 0, 0, 0, 2));
        assertThat(healthyRabbit.sentIds()).containsExactly(rabbitRow);
        assertThat(row(rabbitRow).outcome()).isEqualTo(DispatchOutcome.SENT);
        for (long id : List.of(kafkaRow, otherKafkaRow)) {
            assertThat(row(id).attempts()).isOne();
            assertThat(row(id).parked()).isTrue();
            assertThat(row(id).lastError()).contains("no ack from Kafka");
        }
    }

    static PublishResult failAll(List<OutboxRecord> records, Throwable failure) {
        Map<Long, Throwable> failures = new LinkedHashMap<>();
        records.forEach(record -> failures.put(record.id(), failure));
        return PublishResult.failed(failures);
    }

    // ---------------------------------------------------------------- at-least-once

    @Test
    void aDispatcherThatDiesAfterSendingLeavesTheRowToBeSentAgainAndTheConsumerDedupsIt() throws Exception {
        jdbc.update("DELETE FROM processed_messages WHERE consumer = 'outbox-dedup'");
        IdempotentExecutor executor = IdempotentExecutor.builder(JdbcProcessedMessageStore.builder(dataSource)
                        .clock(clock)
                        .build())
                .build();
        HandlerDefinition handler = HandlerDefinition.builder("outbox-dedup")
                .mode(IdempotencyMode.LEASE)
                .build();
        List<String> mails = Collections.synchronizedList(new ArrayList<>());
        List<MessageOutcome> outcomes = Collections.synchronizedList(new ArrayList<>());
        OutboxPublisher consumer = records -> {
            for (OutboxRecord record : records) {
                Map<String, @Nullable Object> headers = new LinkedHashMap<>(record.brokerHeaders());
                try {
                    HandlerResult<Void> result =
                            executor.execute(handler, InboundMessage.of(record.payload(), headers), () -> {
                                mails.add(record.payload());
                                return null;
                            });
                    outcomes.add(result.outcome());
                } catch (Exception ex) {
                    throw new IllegalStateException(ex);
                }
            }
            return PublishResult.allSent();
        };
        long id = append("order-4", "mail.send", "welcome order-4");

        // The first dispatcher delivers, then dies before it can mark the row.
        OutboxDispatcher dying = dispatcher(records -> {
                    consumer.publish(records);
                    throw new SimulatedCrash();
                })
                .build();
        assertThatThrownBy(dying::dispatchOnce).isInstanceOf(SimulatedCrash.class);
        assertThat(row(id).pending()).isTrue();

        // Another dispatcher leaves the row alone while the dead one's lease lasts...
        OutboxDispatcher survivor = dispatcher(consumer).build();
        clock.advance(OutboxDispatcher.DEFAULT_LEASE.multipliedBy(2));
        assertThat(survivor.dispatchOnce().claimed())
                .as("the database's clock, not ours, ends a lease")
                .isZero();
        // ...and sends it again when the lease ends: at-least-once.
        expireLeases();
        assertThat(survivor.dispatchOnce().sent()).isOne();

        assertThat(outcomes).containsExactly(MessageOutcome.PROCESSED, MessageOutcome.DUPLICATE);
        assertThat(mails).containsExactly("welcome order-4");
        assertThat(row(id).outcome()).isEqualTo(DispatchOutcome.SENT);
    }

    /** Stands for the process dying: nothing after it runs. */
    static final class SimulatedCrash extends Error {
        SimulatedCrash() {
            super("simulated crash after the send");
        }
    }

    @Test
    void aLateMarkOfADispatcherWhoseLeaseWasTakenOverChangesNothing() {
        long id = append("order-5", "mail.send", "{}");
        AtomicInteger slowSends = new AtomicInteger();
        OutboxDispatcher[] other = new OutboxDispatcher[1];
        RecordingPublisher fast = new RecordingPublisher();
        other[0] = dispatcher(fast).build();
        OutboxDispatcher slow = dispatcher(records -> {
                    // While this send hangs past the lease, another dispatcher takes the row over and sends it.
                    slowSends.incrementAndGet();
                    expireLeases();
                    assertThat(other[0].dispatchOnce().sent()).isOne();
                    return PublishResult.failed(Map.of(records.get(0).id(), new IllegalStateException("late failure")));
                })
                .build();

        slow.dispatchOnce();

        OutboxRecord row = row(id);
        assertThat(row.outcome()).isEqualTo(DispatchOutcome.SENT);
        assertThat(row.attempts())
                .as("the stale claim's failure was not recorded")
                .isZero();
        assertThat(fast.sentIds()).containsExactly(id);
    }

    // ---------------------------------------------------------------- deadlines and outages (issue 8, defect 5)

    @Test
    void aPublisherThatBlocksIsCutAtTheDeadlineAndItsRowsCountAttemptsUntilParked() throws Exception {
        long healthy = append("h", "orders", "ok");
        long stuck1 = append("s1", "no.such.topic", "x");
        long stuck2 = append("s2", "no.such.topic", "y");
        BlockingBroker broker = new BlockingBroker(record -> record.topic().equals("no.such.topic"));
        OutboxDispatcher dispatcher = dispatcher(broker)
                .lease(Duration.ofSeconds(10))
                .sendTimeout(Duration.ofMillis(500))
                .maxAttempts(2)
                .build();
        ExecutorService thread = Executors.newSingleThreadExecutor();
        try {
            // The broker blocks until released, which this test never does before the round ends:
            // the round can only have returned because the send deadline interrupted it.
            DispatchResult first = thread.submit(dispatcher::dispatchOnce).get(60, TimeUnit.SECONDS);
            assertThat(broker.interrupted).as("cut by the send deadline").hasValue(1);
            assertThat(first).isEqualTo(new DispatchResult(3, 1, 0, 0, 2, 0));
            assertThat(broker.deliveries(healthy)).isOne();
            assertThat(row(healthy).outcome()).isEqualTo(DispatchOutcome.SENT);
            for (long id : List.of(stuck1, stuck2)) {
                assertThat(row(id).attempts()).isOne();
                assertThat(row(id).pending()).isTrue();
                assertThat(row(id).lastError()).contains("send interrupted");
            }

            clock.advance(Duration.ofSeconds(30));
            DispatchResult second = thread.submit(dispatcher::dispatchOnce).get(5, TimeUnit.SECONDS);
            assertThat(second).isEqualTo(new DispatchResult(2, 0, 0, 0, 0, 2));
            assertThat(row(stuck1).parked()).isTrue();
            assertThat(row(stuck2).attempts()).isEqualTo(2);
            assertThat(broker.deliveries(stuck1)).isZero();
            assertThat(Thread.interrupted()).isFalse();
        } finally {
            broker.release();
            thread.shutdownNow();
        }
    }

    @Test
    void twoDispatchersWithABrokerThatHangsNeverSendTheSameRowTwice() {
        OutboxTable realTime = OutboxTable.builder(dataSource).build();
        Outbox realTimeOutbox = Outbox.builder(realTime).build();
        List<Long> ids = tx.execute(status -> realTimeOutbox.appendAll(IntStream.range(0, 60)
                .mapToObj(i -> OutboxMessage.of("agg-" + i, "t", "p" + i))
                .toList()));
        // Every fifth row hangs at its first send; later sends of it go through.
        Set<Long> hungOnce = ConcurrentHashMap.newKeySet();
        BlockingBroker broker = new BlockingBroker(record -> record.id() % 5 == 0 && hungOnce.add(record.id()));
        List<OutboxDispatcher> dispatchers = IntStream.range(0, 2)
                .mapToObj(i -> OutboxDispatcher.builder(realTime, broker)
                        .batchSize(7)
                        .lease(Duration.ofSeconds(2))
                        .sendTimeout(Duration.ofMillis(300))
                        .minPollInterval(Duration.ofMillis(5))
                        .maxPollInterval(Duration.ofMillis(20))
                        .backoff(new OutboxBackoff(Duration.ofMillis(5), 2, Duration.ofMillis(20), 0.5))
                        .maxAttempts(1_000)
                        .meterRegistry(meters)
                        .build())
                .toList();
        try {
            dispatchers.forEach(OutboxDispatcher::start);
            await().atMost(Duration.ofSeconds(30))
                    .pollInterval(Duration.ofMillis(50))
                    .until(() -> realTime.stats().pending() == 0);
        } finally {
            dispatchers.forEach(OutboxDispatcher::close);
            broker.release();
        }

        assertThat(ids)
                .allSatisfy(id -> assertThat(broker.deliveries(id))
                        .as("deliveries of row %d", id)
                        .isOne());
        assertThat(broker.sentConcurrently)
                .as("rows sent by two dispatchers at once")
                .isEmpty();
        assertThat(broker.interrupted.get())
                .isEqualTo(ids.stream().filter(id -> id % 5 == 0).count());
        // A hung send cut at the deadline counts an attempt (as do the rows of its batch after it, not sent).
        assertThat(ids.stream().filter(id -> id % 5 == 0))
                .allSatisfy(id -> assertThat(row(id).attempts()).isPositive());
    }

    @Test
    void theKafkaPublisherWithAnUnreachableBrokerDoesNotHoldTheBatchPastTheDeadline() throws Exception {
        tx.executeWithoutResult(status -> outbox.appendAll(IntStream.range(0, 20)
                .mapToObj(i -> OutboxMessage.of("agg-" + i, "orders", "p" + i))
                .toList()));
        int closedPort;
        try (java.net.ServerSocket socket = new java.net.ServerSocket(0)) {
            closedPort = socket.getLocalPort();
        }
        try (io.sumi.outbox.kafka.KafkaOutboxPublisher kafka = io.sumi.outbox.kafka.KafkaOutboxPublisher.create(
                Map.of("bootstrap.servers", "127.0.0.1:" + closedPort), Duration.ofSeconds(1))) {
            OutboxDispatcher dispatcher =
                    dispatcher(kafka).sendTimeout(Duration.ofSeconds(1)).build();

            DispatchResult result = dispatcher.dispatchOnce();

            // One round fails the whole batch (released for the next round, one attempt each).
            assertThat(result).isEqualTo(new DispatchResult(20, 0, 0, 0, 20, 0));
            assertThat(jdbc.queryForList("SELECT attempts FROM outbox", Integer.class))
                    .containsOnly(1);
            // What ends the round is the deadline, not one blocked send per row: a send() blocks up to
            // max.block.ms (half the 1 s send timeout) for the missing metadata, so at most two rows wait
            // for it; the others fail at their turn without a send ("ran out before its turn"), or by the
            // dispatcher's interrupt at the deadline (when making the producer alone took the budget, as on
            // a loaded machine). Without the deadline every row's send would block in turn (20 x max.block.ms).
            List<String> errors = jdbc.queryForList("SELECT last_error FROM outbox", String.class);
            assertThat(errors)
                    .as("%s", errors)
                    .allSatisfy(error -> assertThat(error)
                            .containsAnyOf("ran out before its turn", "InterruptException", "not present in metadata"))
                    .filteredOn(error -> error.contains("not present in metadata"))
                    .hasSizeLessThanOrEqualTo(2);
        }
    }

    @Test
    void whenTheDatabaseIsBrieflyUnreachableTheMarksAreRetriedWithinSecondsNotAfterTheLease() {
        long id = append("order-outage", "mail.send", "{}");
        FlakyDataSource flaky = new FlakyDataSource(dataSource);
        OutboxTable flakyTable = OutboxTable.builder(flaky).clock(clock).build();
        RecordingPublisher sent = new RecordingPublisher();
        OutboxDispatcher dispatcher = OutboxDispatcher.builder(flakyTable, records -> {
                    // The database goes away while the batch is sent: the next 5 connections fail.
                    flaky.failNext(5);
                    return sent.publish(records);
                })
                .meterRegistry(meters)
                .build();

        DispatchResult result = dispatcher.dispatchOnce();

        // Marked within this one round (the marks were retried after five failed connections),
        // not left for the next claim after the lease ends.
        assertThat(result.sent()).isOne();
        assertThat(flaky.failed.get()).isEqualTo(5);
        assertThat(row(id).outcome()).isEqualTo(DispatchOutcome.SENT);
        assertThat(sent.sentIds()).containsExactly(id);
    }

    /** A DataSource whose next connections fail, as while the database restarts. */
    static final class FlakyDataSource extends org.springframework.jdbc.datasource.DelegatingDataSource {

        final AtomicInteger toFail = new AtomicInteger();
        final AtomicInteger failed = new AtomicInteger();

        FlakyDataSource(DataSource target) {
            super(target);
        }

        void failNext(int connections) {
            toFail.set(connections);
        }

        @Override
        public java.sql.Connection getConnection() throws java.sql.SQLException {
            if (toFail.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                failed.incrementAndGet();
                throw new java.sql.SQLTransientConnectionException(
                        "simulated database outage: connection refused", "08001");
            }
            return super.getConnection();
        }
    }

    // ---------------------------------------------------------------- clocks (issue 8, defect 10)

    @Test
    void aDispatcherWhoseClockRunsAheadByMoreThanTheLeaseDoesNotTakeRowsLeasedByAnother() {
        long id = append("order-skew", "mail.send", "{}");
        MutableClock fastClock = new MutableClock(
                clock.instant().plus(OutboxDispatcher.DEFAULT_LEASE).plus(Duration.ofMinutes(1)));
        RecordingPublisher fastPublisher = new RecordingPublisher();
        OutboxDispatcher fast = OutboxDispatcher.builder(
                        OutboxTable.builder(dataSource).clock(fastClock).build(), fastPublisher)
                .meterRegistry(meters)
                .build();
        List<Integer> takenByTheFastOne = new ArrayList<>();
        OutboxDispatcher slow = dispatcher(records -> {
                    // While this dispatcher sends, one whose clock is three minutes ahead polls.
                    takenByTheFastOne.add(fast.dispatchOnce().claimed());
                    return PublishResult.allSent();
                })
                .build();

        assertThat(slow.dispatchOnce().sent()).isOne();

        assertThat(takenByTheFastOne)
                .as("the fast clock did not end the other's lease")
                .containsExactly(0);
        assertThat(fastPublisher.sentIds()).isEmpty();
        assertThat(row(id).outcome()).isEqualTo(DispatchOutcome.SENT);
    }

    @Test
    void aDispatcherWhoseClockRunsBehindLeasesRowsForTheWholeLeaseAsTheDatabaseCountsIt() {
        append("order-skew-2", "mail.send", "{}");
        MutableClock slowClock = new MutableClock(clock.instant().minus(Duration.ofDays(1)));
        RecordingPublisher other = new RecordingPublisher();
        OutboxDispatcher behind = OutboxDispatcher.builder(
                        OutboxTable.builder(dataSource).clock(slowClock).build(), records -> {
                            assertThat(dispatcher(other).build().dispatchOnce().claimed())
                                    .isZero();
                            return PublishResult.allSent();
                        })
                .meterRegistry(meters)
                .build();
        // Due times still follow the dispatcher's own clock: make the row due for the slow one.
        setAvailableAt(slowClock.instant().minusSeconds(1));

        assertThat(behind.dispatchOnce().sent()).isOne();
        assertThat(other.sentIds()).isEmpty();
    }

    /** Ends every lease, as the database's clock would once the lease has passed. */
    void expireLeases() {
        org.springframework.jdbc.core.PreparedStatementSetter setter =
                statement -> table.dialect().setInstant(statement, 1, Instant.parse("2000-01-01T00:00:00Z"));
        jdbc.update("UPDATE outbox SET lease_until = ? WHERE lease_until IS NOT NULL", setter);
    }

    /** Makes every pending row due at {@code at}. */
    void setAvailableAt(Instant at) {
        org.springframework.jdbc.core.PreparedStatementSetter setter =
                statement -> table.dialect().setInstant(statement, 1, at);
        jdbc.update("UPDATE outbox SET available_at = ? WHERE dispatched_at IS NULL", setter);
    }

    // ---------------------------------------------------------------- ordering

    @Test
    void aRowWaitsWhileAnEarlierRowOfItsAggregateIsInBackoffOrParkedAndOtherAggregatesDoNot() {
        long a1 = append("A", "orders", "A1");
        long a2 = append("A", "orders", "A2");
        long b1 = append("B", "orders", "B1");
        long x1 = append("X", "mail.send", "X1");
        long x2 = append("X", "mail.send", "X2");
        AtomicInteger a1Failures = new AtomicInteger();
        publisher.failWith(record -> (record.id() == a1 && a1Failures.incrementAndGet() <= 2) || record.id() == x1
                ? new IllegalStateException("fails")
                : null);
        OutboxDispatcher dispatcher = dispatcher(publisher)
                .orderedTopics(List.of("orders"))
                .maxAttempts(2)
                .build();

        DispatchResult first = dispatcher.dispatchOnce();
        // A1 failed; B1 went; mail.send is not ordered, so X2 went although X1 failed.
        assertThat(first.sent()).isEqualTo(2);
        assertThat(publisher.sentIds()).containsExactly(b1, x2);
        assertThat(dispatcher.dispatchOnce().claimed())
                .as("A2 waits for A1, in backoff")
                .isZero();

        clock.advance(Duration.ofSeconds(30));
        assertThat(dispatcher.dispatchOnce().parked()).isEqualTo(2);
        assertThat(row(a1).parked()).isTrue();
        clock.advance(Duration.ofHours(1));
        assertThat(dispatcher.dispatchOnce().claimed())
                .as("A2 waits for A1, parked")
                .isZero();
        assertThat(row(a2).pending()).isTrue();

        table.redrive(a1);
        assertThat(dispatcher.dispatchOnce().sent())
                .as("A1 alone: A2 still waits for it")
                .isOne();
        assertThat(dispatcher.dispatchOnce().sent()).isOne();
        assertThat(publisher.sentIds()).containsExactly(b1, x2, a1, a2);
    }

    @Test
    void aggregatesAndTopicsThatDifferByTrailingSpacesAreDistinct() {
        // On MariaDB a PAD SPACE collation (utf8mb4_bin) made "A" and "A " one aggregate, and the
        // topic "orders " the ordered topic "orders": both rows waited for A1.
        long a1 = append("A", "orders", "A1");
        long otherAggregate = append("A ", "orders", "A space");
        long otherTopic = append("A", "orders ", "topic space");
        publisher.failWith(record -> record.id() == a1 ? new IllegalStateException("fails") : null);
        OutboxDispatcher dispatcher =
                dispatcher(publisher).orderedTopics(List.of("orders")).build();

        dispatcher.dispatchOnce();

        assertThat(publisher.sentIds()).containsExactlyInAnyOrder(otherAggregate, otherTopic);
        assertThat(publisher.sent()).extracting(OutboxRecord::aggregateId).containsExactlyInAnyOrder("A ", "A");
        assertThat(publisher.sent()).extracting(OutboxRecord::topic).containsExactlyInAnyOrder("orders", "orders ");
    }

    @Test
    void anEarlierRowClaimedByAnotherDispatcherHoldsBackTheNextRowOfItsAggregate() {
        long a1 = append("A", "orders", "A1");
        long a2 = append("A", "orders", "A2");
        long b1 = append("B", "orders", "B1");
        RecordingPublisher second = new RecordingPublisher();
        OutboxDispatcher other = dispatcher(second).build();
        // While the first dispatcher sends A1 and B1, the second one runs: A2 must wait.
        OutboxDispatcher first = dispatcher(records -> {
                    assertThat(other.dispatchOnce().claimed()).isZero();
                    return PublishResult.allSent();
                })
                .build();

        assertThat(first.dispatchOnce().sent()).isEqualTo(2);
        assertThat(other.dispatchOnce().sent()).isOne();
        assertThat(second.sentIds()).containsExactly(a2);
        assertThat(row(a1).outcome()).isEqualTo(DispatchOutcome.SENT);
        assertThat(row(b1).outcome()).isEqualTo(DispatchOutcome.SENT);
    }

    @Test
    void twoDispatchersOnTenThousandRowsSendEveryRowOnceInAggregateOrder() {
        raceTwoDispatchers(false);
    }

    @Test
    void twoDispatchersOnTenThousandRowsSendEveryRowOnceInAggregateOrderWhileThePublisherFailsForAWhile() {
        raceTwoDispatchers(true);
    }

    /**
     * 10,000 rows, 20 per aggregate across 500 aggregates, two dispatchers with their own loops and
     * publishers, one consumer that records what arrives. With {@code failing}, the first 4,000
     * sends fail at random (30 %) and are retried with a short backoff.
     */
    private void raceTwoDispatchers(boolean failing) {
        int aggregates = 500;
        int perAggregate = 20;
        OutboxTable realTime = OutboxTable.builder(dataSource).build();
        appendRows(realTime, "race", aggregates, perAggregate);
        analyze();
        Map<String, List<Integer>> received = new ConcurrentHashMap<>();
        Map<Long, Integer> deliveries = new ConcurrentHashMap<>();
        AtomicInteger sends = new AtomicInteger();
        AtomicInteger failures = new AtomicInteger();
        OutboxPublisher consumer = records -> {
            Map<Long, Throwable> failed = new LinkedHashMap<>();
            for (OutboxRecord record : records) {
                if (failing && sends.incrementAndGet() <= 4_000 && Math.random() < 0.3) {
                    failures.incrementAndGet();
                    failed.put(record.id(), new IllegalStateException("broker hiccup"));
                    continue;
                }
                String[] parts = record.payload().split(":");
                deliveries.merge(record.id(), 1, Integer::sum);
                received.computeIfAbsent(parts[0], key -> Collections.synchronizedList(new ArrayList<>()))
                        .add(Integer.parseInt(parts[1]));
            }
            return PublishResult.failed(failed);
        };
        List<OutboxDispatcher> dispatchers = List.of(
                racer(realTime, consumer).build(), racer(realTime, consumer).build());
        try {
            dispatchers.forEach(OutboxDispatcher::start);
            await().atMost(Duration.ofSeconds(90))
                    .pollInterval(Duration.ofMillis(100))
                    .until(() -> deliveries.size() == aggregates * perAggregate);
        } finally {
            dispatchers.forEach(OutboxDispatcher::close);
        }

        assertThat(deliveries).hasSize(aggregates * perAggregate);
        assertThat(deliveries.values()).as("no row sent twice").containsOnly(1);
        List<Integer> inOrder = IntStream.range(0, perAggregate).boxed().toList();
        assertThat(received)
                .hasSize(aggregates)
                .allSatisfy((aggregate, seqs) -> assertThat(seqs).as(aggregate).containsExactlyElementsOf(inOrder));
        assertThat(realTime.stats().pending()).isZero();
        assertThat(counter("outbox.dispatched", "topic", "race", "outcome", "sent"))
                .isEqualTo(aggregates * perAggregate);
        assertThat(meters.find("outbox.polls").tag("result", "rows").counters()).isNotEmpty();
        if (failing) {
            assertThat(failures.get()).isGreaterThan(500);
            assertThat(counter("outbox.send.failures", "topic", "race")).isEqualTo(failures.get());
        }
    }

    /** Updates the planner's statistics after a bulk insert, as autovacuum would shortly. */
    private void analyze() {
        switch (database()) {
            case POSTGRESQL -> jdbc.execute("ANALYZE outbox");
            case MARIADB -> jdbc.execute("ANALYZE TABLE outbox");
            case H2 -> jdbc.execute("ANALYZE TABLE outbox");
        }
    }

    /** A dispatcher for races: short polls and back-off, no parking. */
    private OutboxDispatcher.Builder racer(OutboxTable realTime, OutboxPublisher publisher) {
        return OutboxDispatcher.builder(realTime, publisher)
                .batchSize(100)
                .minPollInterval(Duration.ofMillis(5))
                .maxPollInterval(Duration.ofMillis(20))
                .backoff(new OutboxBackoff(Duration.ofMillis(5), 2, Duration.ofMillis(20), 0.5))
                .maxAttempts(1_000)
                .meterRegistry(meters);
    }

    /**
     * Appends {@code perAggregate} rows to each of {@code aggregates} aggregates ({@code agg-<n>},
     * payload {@code <n>:<seq>}), one transaction per sequence number, so ids run sequence by
     * sequence across the aggregates.
     */
    private void appendRows(OutboxTable realTime, String topic, int aggregates, int perAggregate) {
        Outbox realTimeOutbox = Outbox.builder(realTime).build();
        for (int seq = 0; seq < perAggregate; seq++) {
            int s = seq;
            tx.executeWithoutResult(status -> realTimeOutbox.appendAll(IntStream.range(0, aggregates)
                    .mapToObj(agg -> OutboxMessage.of("agg-" + agg, topic, agg + ":" + s))
                    .toList()));
        }
    }

    /** Runs {@code dispatchers} until {@code realTime} has no pending row, then closes them. */
    private static void runUntilDrained(OutboxTable realTime, List<OutboxDispatcher> dispatchers) {
        try {
            dispatchers.forEach(OutboxDispatcher::start);
            await().atMost(Duration.ofSeconds(90))
                    .pollInterval(Duration.ofMillis(50))
                    .until(() -> realTime.stats().pending() == 0);
        } finally {
            dispatchers.forEach(OutboxDispatcher::close);
        }
    }

    // ---------------------------------------------------------------- pipelining (issue 12)

    @Test
    void pipelinedDispatchersWhoseBrokerAcksOutOfOrderAndFailsKeepEveryAggregatesOrder() {
        ReorderingBroker broker = pipelineRace(List.of(OutboxDispatcher.ALL_TOPICS));

        assertThat(broker.maxConcurrentBatchesOfOneDispatcher.get())
                .as("batches of one dispatcher were on the wire at the same time")
                .isGreaterThan(1);
        assertThat(broker.failures.get()).as("failures were injected").isGreaterThan(50);
        assertThat(broker.sentBeforeEarlierRowWasAcked)
                .as("rows sent before the previous row of their aggregate was acknowledged")
                .isEmpty();
        List<Integer> inOrder =
                IntStream.range(0, PIPELINE_ROWS_PER_AGGREGATE).boxed().toList();
        assertThat(broker.received)
                .hasSize(PIPELINE_AGGREGATES)
                .allSatisfy((aggregate, seqs) -> assertThat(seqs).as(aggregate).containsExactlyElementsOf(inOrder));
    }

    /**
     * Negative control of the test above: the same race with the order gate switched off (no
     * ordered topic) does overtake, so the checks above can fail.
     */
    @Test
    void withoutTheOrderGatePipelinedBatchesOvertakeEarlierRowsOfTheirAggregate() {
        ReorderingBroker broker = pipelineRace(List.of());

        assertThat(broker.sentBeforeEarlierRowWasAcked)
                .as("without ordering, rows go out before the previous row of their aggregate is acknowledged")
                .isNotEmpty();
    }

    static final int PIPELINE_AGGREGATES = 100;

    static final int PIPELINE_ROWS_PER_AGGREGATE = 10;

    /**
     * 1,000 rows, 10 per aggregate, two dispatchers of pipeline depth 4 (up to 8 batches claimed
     * and not yet marked), through a broker that delivers each batch in shuffled order after a
     * random pause (so concurrent batches overtake each other) and fails 20 % of the first 1,500
     * records. Returns once every row is dispatched; every row reached the broker (at least once).
     */
    private ReorderingBroker pipelineRace(List<String> orderedTopics) {
        OutboxTable realTime = OutboxTable.builder(dataSource).build();
        appendRows(realTime, "pipeline", PIPELINE_AGGREGATES, PIPELINE_ROWS_PER_AGGREGATE);
        analyze();
        ReorderingBroker broker = new ReorderingBroker(1_500);
        runUntilDrained(
                realTime,
                IntStream.range(0, 2)
                        .mapToObj(i -> racer(realTime, broker)
                                .batchSize(20)
                                .pipelineDepth(4)
                                .orderedTopics(orderedTopics)
                                .build())
                        .toList());
        assertThat(broker.delivered)
                .as("every row reached the broker")
                .hasSize(PIPELINE_AGGREGATES * PIPELINE_ROWS_PER_AGGREGATE);
        assertThat(counter("outbox.dispatched", "topic", "pipeline", "outcome", "sent"))
                .isEqualTo(PIPELINE_AGGREGATES * PIPELINE_ROWS_PER_AGGREGATE);
        return broker;
    }

    /**
     * A broker whose acknowledgements come out of order: each batch is delivered shuffled, after a
     * random pause of up to 3 ms, and records fail at random (20 %) among the first
     * {@code failingSends}. It notes every record delivered while the previous record of its
     * aggregate (payload {@code aggregate:seq}) was not yet acknowledged, i.e. its batch had not
     * yet returned. Thread-safe, not serialized.
     */
    static final class ReorderingBroker implements OutboxPublisher {

        final Map<String, List<Integer>> received = new ConcurrentHashMap<>();
        final Set<Long> delivered = ConcurrentHashMap.newKeySet();
        final Set<String> acked = ConcurrentHashMap.newKeySet();
        final List<String> sentBeforeEarlierRowWasAcked = Collections.synchronizedList(new ArrayList<>());
        final AtomicInteger failures = new AtomicInteger();
        /** Batches in the broker at once from the sender threads of one dispatcher, at most. */
        final AtomicInteger maxConcurrentBatchesOfOneDispatcher = new AtomicInteger();

        private final Map<String, AtomicInteger> concurrentBatches = new ConcurrentHashMap<>();
        /** Per dispatcher: released when its second batch is on the wire while its first still is. */
        private final Map<String, java.util.concurrent.CountDownLatch> secondBatch = new ConcurrentHashMap<>();

        private final AtomicInteger sends = new AtomicInteger();
        private final int failingSends;

        ReorderingBroker(int failingSends) {
            this.failingSends = failingSends;
        }

        @Override
        public PublishResult publish(List<OutboxRecord> records) {
            // Sender threads are named sumi-outbox-sender-<dispatcher>-<n>.
            String name = Thread.currentThread().getName();
            String dispatcher = name.substring(0, name.lastIndexOf('-'));
            AtomicInteger concurrent = concurrentBatches.computeIfAbsent(dispatcher, key -> new AtomicInteger());
            int onTheWire = concurrent.incrementAndGet();
            maxConcurrentBatchesOfOneDispatcher.accumulateAndGet(onTheWire, Math::max);
            try {
                // Forces the overlap instead of hoping for it: a dispatcher's first batch stays on
                // the wire until its second one joins it (bounded, so a dispatcher that does not
                // pipeline fails the assertion instead of hanging the test). Once per dispatcher:
                // after a wait in vain no later batch waits. (A dispatcher whose second claim found
                // nothing, because the other one had taken every head, claims no second batch for
                // a while; the rows behind its held batch then went out one batch per 10 s wait,
                // and the drain ran past its 90 s.)
                java.util.concurrent.CountDownLatch joined =
                        secondBatch.computeIfAbsent(dispatcher, key -> new java.util.concurrent.CountDownLatch(1));
                if (onTheWire > 1) {
                    joined.countDown();
                } else if (joined.getCount() > 0 && !joined.await(10, TimeUnit.SECONDS)) {
                    joined.countDown();
                }
                List<OutboxRecord> shuffled = new ArrayList<>(records);
                Collections.shuffle(shuffled);
                TimeUnit.MICROSECONDS.sleep(
                        java.util.concurrent.ThreadLocalRandom.current().nextInt(3_000));
                Map<Long, Throwable> failed = new LinkedHashMap<>();
                List<String> deliveredNow = new ArrayList<>();
                for (OutboxRecord record : shuffled) {
                    if (sends.incrementAndGet() <= failingSends && Math.random() < 0.2) {
                        failures.incrementAndGet();
                        failed.put(record.id(), new IllegalStateException("broker hiccup"));
                        continue;
                    }
                    String[] parts = record.payload().split(":");
                    int seq = Integer.parseInt(parts[1]);
                    if (seq > 0 && !acked.contains(parts[0] + ":" + (seq - 1))) {
                        sentBeforeEarlierRowWasAcked.add(record.payload());
                    }
                    delivered.add(record.id());
                    received.computeIfAbsent(parts[0], key -> Collections.synchronizedList(new ArrayList<>()))
                            .add(seq);
                    deliveredNow.add(record.payload());
                }
                // The acknowledgements: the dispatcher learns of them when publish returns.
                acked.addAll(deliveredNow);
                return PublishResult.failed(failed);
            } catch (InterruptedException ex) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted", ex);
            } finally {
                concurrent.decrementAndGet();
            }
        }
    }

    @Test
    void aPipelinedDispatcherThatDiesWithBatchesInFlightLosesNoRowAndTheSurvivorKeepsTheOrder() throws Exception {
        OutboxTable realTime = OutboxTable.builder(dataSource).build();
        int aggregates = 40;
        int perAggregate = 5;
        appendRows(realTime, "crash", aggregates, perAggregate);
        Map<String, List<Integer>> firstDeliveries = new ConcurrentHashMap<>();
        Set<Long> delivered = ConcurrentHashMap.newKeySet();
        java.util.function.Consumer<OutboxRecord> deliver = record -> {
            if (delivered.add(record.id())) {
                String[] parts = record.payload().split(":");
                firstDeliveries
                        .computeIfAbsent(parts[0], key -> Collections.synchronizedList(new ArrayList<>()))
                        .add(Integer.parseInt(parts[1]));
            }
        };
        // The first two batches go through; every later one waits for the crash, then the process
        // dies in it: after delivering (odd calls) or before (even calls). Its rows stay leased.
        AtomicInteger calls = new AtomicInteger();
        AtomicInteger waiting = new AtomicInteger();
        AtomicInteger rowsInCrashedBatches = new AtomicInteger();
        java.util.concurrent.CountDownLatch crash = new java.util.concurrent.CountDownLatch(1);
        OutboxDispatcher dying = OutboxDispatcher.builder(realTime, records -> {
                    int call = calls.incrementAndGet();
                    if (call <= 2) {
                        records.forEach(deliver);
                        return PublishResult.allSent();
                    }
                    if (call % 2 == 1) {
                        records.forEach(deliver);
                    }
                    rowsInCrashedBatches.addAndGet(records.size());
                    waiting.incrementAndGet();
                    try {
                        crash.await();
                    } catch (InterruptedException ex) {
                        Thread.currentThread().interrupt();
                    }
                    throw new SimulatedCrash();
                })
                .batchSize(15)
                .pipelineDepth(3)
                .meterRegistry(meters)
                .build();
        ExecutorService stopper = Executors.newSingleThreadExecutor();
        try {
            dying.start();
            await().atMost(Duration.ofSeconds(20)).until(() -> waiting.get() == 3);
            java.util.concurrent.Future<?> stopped = stopper.submit(() -> dying.stop(Duration.ofSeconds(10)));
            crash.countDown();
            stopped.get(20, TimeUnit.SECONDS);
        } finally {
            crash.countDown();
            stopper.shutdownNow();
            dying.close();
        }
        assertThat(jdbc.queryForObject(
                        "SELECT COUNT(*) FROM outbox WHERE dispatched_at IS NULL AND lease_until IS NOT NULL",
                        Integer.class))
                .as("rows of the three batches in flight at the crash, still leased")
                .isEqualTo(rowsInCrashedBatches.get())
                .isPositive();

        // When the dead dispatcher's leases end, a survivor sends every row it left.
        expireLeases();
        OutboxPublisher healthy = records -> {
            records.forEach(deliver);
            return PublishResult.allSent();
        };
        runUntilDrained(
                realTime,
                List.of(racer(realTime, healthy).batchSize(15).pipelineDepth(3).build()));

        assertThat(delivered).as("at least once: no row lost").hasSize(aggregates * perAggregate);
        List<Integer> inOrder = IntStream.range(0, perAggregate).boxed().toList();
        assertThat(firstDeliveries)
                .hasSize(aggregates)
                .allSatisfy((aggregate, seqs) -> assertThat(seqs).as(aggregate).containsExactlyElementsOf(inOrder));
    }

    @Test
    void stoppingAPipelinedDispatcherLeavesNoRowLeasedAndItsBatchesInFlightAreMarked() {
        OutboxTable realTime = OutboxTable.builder(dataSource).build();
        Outbox realTimeOutbox = Outbox.builder(realTime).build();
        List<Long> ids = tx.execute(status -> realTimeOutbox.appendAll(IntStream.range(0, 60)
                .mapToObj(i -> OutboxMessage.of("agg-" + i, "stop", "p" + i))
                .toList()));
        // Every batch hangs in the broker until the stop interrupts it.
        BlockingBroker broker = new BlockingBroker(record -> true);
        OutboxDispatcher dispatcher = OutboxDispatcher.builder(realTime, broker)
                .batchSize(10)
                .pipelineDepth(3)
                .meterRegistry(meters)
                .build();
        try {
            dispatcher.start();
            await().atMost(Duration.ofSeconds(20))
                    .until(() -> jdbc.queryForObject(
                                    "SELECT COUNT(*) FROM outbox WHERE lease_until IS NOT NULL", Integer.class)
                            == 30);

            // Past the stop's timeout the senders are interrupted; stop returns once their marks ran.
            dispatcher.stop(Duration.ofMillis(200));
            assertThat(dispatcher.isRunning()).isFalse();
            assertThat(jdbc.queryForObject(
                            "SELECT COUNT(*) FROM outbox WHERE dispatched_at IS NULL AND lease_until IS NOT NULL",
                            Integer.class))
                    .as("rows left leased by the stopped dispatcher")
                    .isZero();
        } finally {
            broker.release();
            dispatcher.close();
        }

        assertThat(broker.interrupted.get())
                .as("the three batches in flight were interrupted")
                .isEqualTo(3);
        assertThat(ids).allSatisfy(id -> assertThat(broker.deliveries(id)).isZero());
        assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM outbox WHERE attempts = 1", Integer.class))
                .as("the interrupted sends count a failed attempt")
                .isEqualTo(30);
    }

    // ---------------------------------------------------------------- retrofit switches

    @Test
    void shadowTopicsAreRecordedAsDispatchedWithoutBeingSent() {
        long legacy = append("o-1", "mail.send", "{}");
        long migrated = append("o-1", "invoice.created", "{}");
        OutboxDispatcher dispatcher =
                dispatcher(publisher).shadowTopics(List.of("mail.send")).build();

        assertThat(dispatcher.dispatchOnce()).isEqualTo(new DispatchResult(2, 1, 1, 0, 0, 0));
        assertThat(publisher.sentIds()).containsExactly(migrated);
        assertThat(row(legacy).outcome()).isEqualTo(DispatchOutcome.SHADOW);
        assertThat(row(legacy).dispatchedAt()).isEqualTo(clock.instant());
        assertThat(counter("outbox.dispatched", "topic", "mail.send", "outcome", "shadow"))
                .isEqualTo(1);

        long another = append("o-2", "invoice.created", "{}");
        OutboxDispatcher allShadow = dispatcher(publisher).shadowMode(true).build();
        assertThat(allShadow.dispatchOnce().shadowed()).isOne();
        assertThat(row(another).outcome()).isEqualTo(DispatchOutcome.SHADOW);
        assertThat(publisher.sentIds()).containsExactly(migrated);
    }

    @Test
    void rowsCreatedBeforeTheCutoffAreNotSent() {
        long old = append("o-1", "mail.send", "old");
        clock.advance(Duration.ofHours(1));
        Instant cutoff = clock.instant();
        long fresh = append("o-2", "mail.send", "new");
        OutboxDispatcher dispatcher = dispatcher(publisher).cutoff(cutoff).build();

        assertThat(dispatcher.dispatchOnce()).isEqualTo(new DispatchResult(2, 1, 0, 1, 0, 0));
        assertThat(publisher.sentIds()).containsExactly(fresh);
        assertThat(row(old).outcome()).isEqualTo(DispatchOutcome.SKIPPED);
        assertThat(counter("outbox.dispatched", "topic", "mail.send", "outcome", "skipped"))
                .isEqualTo(1);
    }

    // ---------------------------------------------------------------- retention and stats

    @Test
    void retentionDeletesOnlyRowsDispatchedLongerAgoThanTheRetentionInBatches() {
        tx.executeWithoutResult(status -> outbox.appendAll(IntStream.range(0, 25)
                .mapToObj(i -> OutboxMessage.of("agg-" + i, "t", "p"))
                .toList()));
        long parked = append("parked", "t", "p");
        publisher.failWith(record -> record.id() == parked ? new IllegalStateException("no") : null);
        OutboxDispatcher dispatcher = dispatcher(publisher).maxAttempts(1).build();
        assertThat(dispatcher.dispatchOnce().sent()).isEqualTo(25);
        clock.advance(Duration.ofDays(30).plusSeconds(1));
        long recent = append("recent", "t", "p");
        long pending = append(OutboxMessage.builder("later", "t", "p")
                .delay(Duration.ofDays(1))
                .build());
        dispatcher.dispatchOnce();

        OutboxPruner pruner =
                OutboxPruner.builder(table).batchSize(10).meterRegistry(meters).build();
        assertThat(pruner.prune()).isEqualTo(25);
        assertThat(jdbc.queryForList("SELECT id FROM outbox ORDER BY id", Long.class))
                .containsExactly(parked, recent, pending);
        assertThat(meters.get("outbox.pruned").counter().count()).isEqualTo(25);
        assertThat(pruner.prune()).isZero();
    }

    @Test
    void statsAndGaugesShowTheBacklog() {
        OutboxMetrics gauges = new OutboxMetrics(table, Duration.ZERO);
        gauges.bindTo(meters);
        assertThat(table.stats()).isEqualTo(OutboxStats.EMPTY);
        append("a", "t", "1");
        append("b", "t", "2");
        append(OutboxMessage.builder("c", "t", "3").delay(Duration.ofHours(1)).build());
        clock.advance(Duration.ofMinutes(5));

        OutboxStats stats = table.stats();
        assertThat(stats.pending()).isEqualTo(3);
        assertThat(stats.parked()).isZero();
        assertThat(stats.oldestPendingAge()).isEqualTo(Duration.ofMinutes(5));
        assertThat(meters.get("outbox.pending.total").gauge().value()).isEqualTo(3.0);
        assertThat(meters.get("outbox.oldest.pending.age").gauge().value()).isEqualTo(300.0);

        dispatcher(publisher).build().dispatchOnce();
        assertThat(meters.get("outbox.pending.total").gauge().value()).isEqualTo(1.0);
        assertThat(meters.get("outbox.oldest.pending.age").gauge().value())
                .as("the delayed row is not due yet")
                .isZero();
    }

    // ---------------------------------------------------------------- the loop

    @Test
    void aCommitWakesTheIdleLoopAtOnce() {
        OutboxDispatcher dispatcher = dispatcher(publisher)
                .minPollInterval(Duration.ofMinutes(1))
                .maxPollInterval(Duration.ofMinutes(2))
                .build();
        Outbox waking = Outbox.builder(table).afterCommit(dispatcher::wakeUp).build();
        try {
            dispatcher.start();
            await().atMost(Duration.ofSeconds(5)).until(() -> counter("outbox.polls", "result", "empty") >= 1);
            long id = tx.execute(status -> waking.append("o-1", "mail.send", "{}"));
            // Without the wake-up the loop would sleep for a minute.
            await().atMost(Duration.ofSeconds(5))
                    .until(() -> publisher.sentIds().contains(id));
        } finally {
            dispatcher.close();
        }
        assertThat(dispatcher.isRunning()).isFalse();
    }

    @Test
    void anIdleLoopBacksOffToTheMaximumPollInterval() {
        OutboxDispatcher dispatcher = dispatcher(publisher)
                .minPollInterval(Duration.ofMillis(100))
                .maxPollInterval(Duration.ofMillis(400))
                .build();
        try {
            dispatcher.start();
            // 100 + 200 + 400 + 400 + ... ms: in 2 s at most 7 polls, where a fixed 100 ms would make 20.
            await().during(Duration.ofSeconds(2))
                    .atMost(Duration.ofSeconds(3))
                    .until(() -> counter("outbox.polls", "result", "empty") <= 8);
            assertThat(counter("outbox.polls", "result", "empty")).isGreaterThanOrEqualTo(3);
        } finally {
            dispatcher.close();
        }
    }
}
