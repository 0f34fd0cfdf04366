package io.sumi.outbox;

import static org.assertj.core.api.Assertions.assertThat;

import io.sumi.testing.MutableClock;
import io.sumi.testing.TestDatabase;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * One dispatch round without the loop and without threads: {@link DispatchRound#classify} and
 * {@link DispatchRound#settle} as functions, then whole rounds against a real H2 outbox table with
 * a fake publisher.
 */
class DispatchRoundTests {

    private static final Instant T0 = Instant.parse("2030-01-01T00:00:00Z");

    private final MutableClock clock = MutableClock.at("2030-01-01T00:00:00Z");
    private DataSource dataSource;
    private OutboxTable table;
    private RecordingPublisher publisher;

    @BeforeEach
    void setUp() {
        dataSource = OutboxTestDatabases.dataSource(TestDatabase.H2);
        new JdbcTemplate(dataSource).update("DELETE FROM outbox");
        table = OutboxTable.builder(dataSource).clock(clock).build();
        publisher = new RecordingPublisher();
    }

    /** Appends a row for {@code aggregateId} to mail.send in a committed transaction of its own. */
    private long append(String aggregateId) {
        Outbox outbox = Outbox.builder(table).build();
        TransactionTemplate tx = new TransactionTemplate(new DataSourceTransactionManager(dataSource));
        return tx.execute(status -> outbox.append(aggregateId, "mail.send", "{}"));
    }

    private OutboxDispatcher.Builder dispatcher() {
        return OutboxDispatcher.builder(table, publisher).jitter(() -> 0);
    }

    private static OutboxRecord row(long id, String topic, Instant createdAt, int attempts) {
        return new OutboxRecord(
                id, "agg-" + id, topic, "{}", Map.of(), createdAt, createdAt, null, attempts, null, null, null);
    }

    // ---------------------------------------------------------------- classify and settle: no database, no publisher

    @Test
    void classifySkipsRowsCreatedBeforeTheCutoffEvenOnShadowTopicsAndSendsTheRest() {
        Instant cutoff = T0.plusSeconds(10);
        OutboxRecord old = row(1, "audit", T0, 0);
        OutboxRecord shadow = row(2, "audit", cutoff, 0);
        OutboxRecord send = row(3, "mail.send", cutoff, 0);
        OutboxRecord oldMail = row(4, "mail.send", T0.plusSeconds(9), 0);

        DispatchRound.Batch batch =
                DispatchRound.classify(List.of(old, shadow, send, oldMail), cutoff, TopicSet.of(List.of("audit")));

        assertThat(batch.skipped()).containsExactly(old, oldMail);
        assertThat(batch.shadow()).containsExactly(shadow);
        assertThat(batch.toSend()).containsExactly(send);
        assertThat(batch.claimed()).hasSize(4);
        assertThat(DispatchRound.classify(List.of(old, send), null, TopicSet.NONE)
                        .toSend())
                .containsExactly(old, send);
    }

    @Test
    void settleMarksAcknowledgedRowsSentBacksOffAFailedRowAndParksOneAtItsLastAttempt() {
        DispatchRound round = new DispatchRound(
                dispatcher().maxAttempts(3).backoff(OutboxBackoff.DEFAULT).config());
        OutboxRecord acked = row(1, "mail.send", T0, 0);
        OutboxRecord firstFailure = row(2, "mail.send", T0, 0);
        OutboxRecord lastAttempt = row(3, "mail.send", T0, 2);
        OutboxRecord shadow = row(4, "audit", T0, 0);
        DispatchRound.Batch batch = new DispatchRound.Batch(
                List.of(acked, firstFailure, lastAttempt, shadow),
                List.of(acked, firstFailure, lastAttempt),
                List.of(shadow),
                List.of());
        Instant ackedAt = T0.plusSeconds(1);
        IllegalStateException broker = new IllegalStateException("broker down");

        DispatchRound.Settlement settlement = round.settle(
                batch, PublishResult.failed(Map.of(firstFailure.id(), broker, lastAttempt.id(), broker)), ackedAt);

        assertThat(settlement.sent()).containsExactly(1L);
        assertThat(settlement.shadowed()).containsExactly(4L);
        assertThat(settlement.skipped()).isEmpty();
        assertThat(settlement.failures())
                .containsExactlyInAnyOrder(
                        new OutboxDialect.Failure(
                                2,
                                "java.lang.IllegalStateException: broker down",
                                ackedAt.plus(OutboxBackoff.DEFAULT_INITIAL),
                                null),
                        new OutboxDialect.Failure(3, "java.lang.IllegalStateException: broker down", T0, ackedAt));
        assertThat(settlement.parked()).containsExactly(3L);
        assertThat(settlement.result()).isEqualTo(new DispatchResult(4, 1, 1, 0, 1, 1));
        assertThat(settlement.goOnAtOnce()).isTrue();
    }

    @Test
    void settleOfABatchWithNothingToSendMarksEveryRowWithoutFailures() {
        DispatchRound round = new DispatchRound(dispatcher().config());
        OutboxRecord skipped = row(7, "mail.send", T0, 0);

        DispatchRound.Settlement settlement = round.settle(
                new DispatchRound.Batch(List.of(skipped), List.of(), List.of(), List.of(skipped)),
                PublishResult.allSent(),
                T0);

        assertThat(settlement.skipped()).containsExactly(7L);
        assertThat(settlement.failures()).isEmpty();
        assertThat(settlement.parked()).isEmpty();
        assertThat(settlement.result()).isEqualTo(new DispatchResult(1, 0, 0, 1, 0, 0));
    }

    @Test
    void anErrorSummaryNamesACauseTheMessageOmitsAndIsCutAtAThousandCharacters() {
        assertThat(DispatchRound.summary(new IllegalStateException("send failed", new java.io.IOException("reset"))))
                .isEqualTo("java.lang.IllegalStateException: send failed (cause: java.io.IOException: reset)");
        assertThat(DispatchRound.summary(new IllegalStateException("x".repeat(2000))))
                .hasSize(1000);
    }

    // ---------------------------------------------------------------- whole rounds on a real table

    @Test
    void aRoundReturnsWhatItMarkedWithTheParkedIdsAndAnEmptyRoundSaysTheLoopMayWait() {
        long sent = append("order-1");
        long failing = append("order-2");
        publisher.failWith(record -> record.id() == failing ? new IllegalStateException("rejected") : null);
        DispatchRound round = new DispatchRound(dispatcher().maxAttempts(1).config());

        DispatchRound.Settlement first = round.run();

        assertThat(first.sent()).containsExactly(sent);
        assertThat(first.parked()).containsExactly(failing);
        assertThat(first.result()).isEqualTo(new DispatchResult(2, 1, 0, 0, 0, 1));
        assertThat(first.goOnAtOnce()).isTrue();
        assertThat(table.find(sent).orElseThrow().outcome()).isEqualTo(DispatchOutcome.SENT);
        assertThat(table.find(failing).orElseThrow().parked()).isTrue();
        assertThat(table.find(failing).orElseThrow().lastError())
                .isEqualTo("java.lang.IllegalStateException: rejected");

        DispatchRound.Settlement second = round.run();

        assertThat(second.result()).isEqualTo(DispatchResult.NOTHING);
        assertThat(second.goOnAtOnce()).isFalse();
        assertThat(publisher.attempted).hasSize(2);
    }

    @Test
    void aRoundWhosePublisherThrowsCountsAnAttemptForEveryRowOfTheBatch() {
        long a = append("order-1");
        long b = append("order-2");
        OutboxPublisher throwing = records -> {
            throw new IllegalStateException("producer closed");
        };
        DispatchRound round = new DispatchRound(
                OutboxDispatcher.builder(table, throwing).jitter(() -> 0).config());

        DispatchRound.Settlement settlement = round.run();

        assertThat(settlement.failures()).extracting(OutboxDialect.Failure::id).containsExactly(a, b);
        assertThat(settlement.failures())
                .extracting(OutboxDialect.Failure::availableAt)
                .containsOnly(clock.instant().plus(OutboxBackoff.DEFAULT_INITIAL));
        assertThat(settlement.parked()).isEmpty();
        assertThat(List.of(
                        table.find(a).orElseThrow().attempts(),
                        table.find(b).orElseThrow().attempts()))
                .containsOnly(1);
    }
}
