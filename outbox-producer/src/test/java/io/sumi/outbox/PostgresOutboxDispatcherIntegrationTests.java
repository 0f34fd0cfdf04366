package io.sumi.outbox;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sumi.testing.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Timestamp;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.LongStream;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DriverManagerDataSource;
import org.springframework.jdbc.datasource.SingleConnectionDataSource;

/**
 * The dispatcher on PostgreSQL only: {@code dispatchAmong}, the CDC path, and the claim's plan under
 * stale statistics. The tests of every database are {@link OutboxDispatcherContractTests}.
 */
class PostgresOutboxDispatcherIntegrationTests extends OutboxDispatcherFixture {

    @Override
    TestDatabase database() {
        return TestDatabase.POSTGRESQL;
    }

    // ---------------------------------------------------------------- dispatchAmong (the CDC path)

    @Test
    void dispatchAmongSendsOnlyTheGivenRowsAndTheRowsOfOneAggregateInOrderOverSeveralRounds() {
        long a1 = append("A", "orders", "A1");
        long a2 = append("A", "orders", "A2");
        long a3 = append("A", "orders", "A3");
        long b1 = append("B", "orders", "B1");
        long other = append("C", "orders", "C1");
        OutboxDispatcher dispatcher = dispatcher(publisher).build();

        DispatchResult result = dispatcher.dispatchAmong(List.of(a3, b1, a1, a2));

        assertThat(result).isEqualTo(new DispatchResult(4, 4, 0, 0, 0, 0));
        // A1 and B1 in the first round, then A2, then A3.
        assertThat(publisher.sentIds()).containsExactly(a1, b1, a2, a3);
        assertThat(row(other).pending()).isTrue();
        assertThat(dispatcher.dispatchAmong(List.of(a1, a2))).isEqualTo(DispatchResult.NOTHING);
    }

    @Test
    void dispatchAmongLeavesDelayedRowsRowsBehindAnUnlistedEarlierRowAndRowsLeasedByAnother() {
        long delayed = append(OutboxMessage.builder("D", "orders", "D1")
                .delay(Duration.ofMinutes(1))
                .build());
        long earlier = append("E", "orders", "E1");
        long behind = append("E", "orders", "E2");
        long leased = append("L", "orders", "L1");
        long free = append("F", "orders", "F1");
        RecordingPublisher cdc = new RecordingPublisher();
        OutboxDispatcher cdcDispatcher = dispatcher(cdc).build();
        // A polling round holds L1 (and E1) while the CDC path runs.
        OutboxDispatcher polling = dispatcher(records -> {
                    assertThat(cdcDispatcher.dispatchAmong(List.of(delayed, behind, leased, free)))
                            .isEqualTo(new DispatchResult(1, 1, 0, 0, 0, 0));
                    return PublishResult.allSent();
                })
                .batchSize(2)
                .build();

        assertThat(polling.dispatchOnce().sent()).isEqualTo(2);

        assertThat(cdc.sentIds()).containsExactly(free);
        assertThat(row(delayed).pending()).isTrue();
        assertThat(row(delayed).attempts()).isZero();
        assertThat(row(earlier).outcome()).isEqualTo(DispatchOutcome.SENT);
        assertThat(row(leased).outcome()).isEqualTo(DispatchOutcome.SENT);
        assertThat(row(behind).pending()).isTrue();
    }

    @Test
    void aPollDelayHoldsRowsBackFromPollingButNotFromDispatchAmong() {
        long first = append("A", "orders", "A1");
        long second = append("B", "orders", "B1");
        OutboxDispatcher dispatcher =
                dispatcher(publisher).pollDelay(Duration.ofSeconds(10)).build();

        assertThat(dispatcher.dispatchOnce().claimed()).isZero();
        assertThat(dispatcher.dispatchAmong(List.of(first)).sent()).isOne();
        clock.advance(Duration.ofSeconds(9));
        assertThat(dispatcher.dispatchOnce().claimed()).isZero();
        clock.advance(Duration.ofSeconds(1));
        assertThat(dispatcher.dispatchOnce().sent()).isOne();
        assertThat(publisher.sentIds()).containsExactly(first, second);
    }

    @Test
    void dispatchAmongRecordsAFailedSendForPollingToRetry() {
        long id = append("A", "orders", "A1");
        OutboxDispatcher dispatcher = dispatcher(records ->
                        PublishResult.failed(java.util.Map.of(records.get(0).id(), new IllegalStateException("down"))))
                .build();

        assertThat(dispatcher.dispatchAmong(List.of(id))).isEqualTo(new DispatchResult(1, 0, 0, 0, 1, 0));

        OutboxRecord row = row(id);
        assertThat(row.pending()).isTrue();
        assertThat(row.attempts()).isOne();
        assertThat(row.availableAt()).isAfter(clock.instant());
    }

    // ---------------------------------------------------------------- the claim's plan

    private static final String STALE = "outbox_stale_statistics";

    @AfterEach
    void dropStaleTable() {
        jdbc.execute("DROP TABLE IF EXISTS " + STALE);
    }

    /**
     * The statistics of an outbox analyzed while empty (a new table, one retention emptied), then a
     * burst: 30,000 rows of 1,000 aggregates, the first 10,000 dispatched. Autovacuum is off on the
     * table, so the statistics stay those of the empty table for the whole test.
     */
    private OutboxTable staleTable() {
        jdbc.execute("DROP TABLE IF EXISTS " + STALE);
        jdbc.execute("CREATE TABLE " + STALE + " (LIKE outbox INCLUDING ALL) WITH (autovacuum_enabled = false)");
        jdbc.execute("ANALYZE " + STALE);
        Timestamp now = Timestamp.from(clock.instant());
        jdbc.update(
                "INSERT INTO " + STALE + " (aggregate_id, topic, payload, created_at, available_at)"
                        + " SELECT 'agg-' || (g % 1000), 'orders', 'p' || g, ?, ? FROM generate_series(1, 30000) g",
                now,
                now);
        jdbc.update("UPDATE " + STALE + " SET dispatched_at = ? WHERE id <= 10000", now);
        return OutboxTable.builder(dataSource).tableName(STALE).clock(clock).build();
    }

    /**
     * The steady state of an outbox, then a burst: 20,000 rows, all dispatched, analyzed (as
     * autovacuum would, and a big table is analyzed again only after a tenth of its rows changed),
     * then 30,000 pending rows of 1,000 aggregates (ids 20,001 to 50,000). Autovacuum is off on the
     * table, so only the dispatcher can refresh its statistics.
     */
    private OutboxTable tableAnalyzedWhileEveryRowWasDispatched() {
        jdbc.execute("DROP TABLE IF EXISTS " + STALE);
        jdbc.execute("CREATE TABLE " + STALE + " (LIKE outbox INCLUDING ALL) WITH (autovacuum_enabled = false)");
        Timestamp now = Timestamp.from(clock.instant());
        jdbc.update(
                "INSERT INTO " + STALE + " (aggregate_id, topic, payload, created_at, available_at, dispatched_at)"
                        + " SELECT 'agg-' || (g % 1000), 'orders', 'p' || g, ?, ?, ? FROM generate_series(1, 20000) g",
                now,
                now,
                now);
        jdbc.execute("ANALYZE " + STALE);
        jdbc.update(
                "INSERT INTO " + STALE + " (aggregate_id, topic, payload, created_at, available_at)"
                        + " SELECT 'agg-' || (g % 1000), 'orders', 'p' || g, ?, ? FROM generate_series(1, 30000) g",
                now,
                now);
        return OutboxTable.builder(dataSource).tableName(STALE).clock(clock).build();
    }

    /** The share of rows without dispatched_at in the table's statistics. */
    private double pendingShareInStatistics() {
        return jdbc.queryForObject(
                "SELECT null_frac FROM pg_stats WHERE tablename = ? AND attname = 'dispatched_at'",
                Double.class,
                STALE);
    }

    /** A plan line of the order gate's probe reading the aggregate's rows only. */
    private static boolean probesTheAggregate(String planLine) {
        return planLine.startsWith("Index Cond:") && planLine.contains("(aggregate_id)::text = (c.aggregate_id)::text");
    }

    /** The claim's plan, explained with its real rows; {@code withSettings}: as the dialect runs it. */
    private List<String> explainClaim(OutboxTable stale, boolean withSettings) throws SQLException {
        PostgresOutboxDialect dialect = (PostgresOutboxDialect) stale.dialect();
        List<String> plan = new ArrayList<>();
        try (Connection connection = dataSource.getConnection()) {
            connection.setAutoCommit(false);
            try {
                if (withSettings) {
                    try (Statement settings = connection.createStatement()) {
                        settings.execute(PostgresOutboxDialect.planSettings());
                    }
                }
                String explain = "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) "
                        + dialect.claimStatement(new OutboxDialect.Ordering(true, Set.of()));
                try (PreparedStatement statement = connection.prepareStatement(explain)) {
                    statement.setTimestamp(1, Timestamp.from(clock.instant()));
                    statement.setInt(2, 200);
                    statement.setLong(3, 1L);
                    statement.setLong(4, 30_000L);
                    try (ResultSet rs = statement.executeQuery()) {
                        while (rs.next()) {
                            plan.add(rs.getString(1).strip());
                        }
                    }
                }
            } finally {
                connection.rollback();
                connection.setAutoCommit(true);
            }
        }
        return plan;
    }

    @Test
    void theClaimWalksThePendingIndexInIdOrderWhateverTheStatisticsSay() throws SQLException {
        OutboxTable stale = staleTable();
        String pendingIndex = jdbc.queryForObject(
                "SELECT indexname FROM pg_indexes WHERE tablename = ? AND indexdef LIKE '%(id) WHERE (dispatched_at IS NULL)'",
                String.class, STALE);

        List<String> plan = explainClaim(stale, true);

        assertThat(plan)
                .as("the claim's plan")
                .noneMatch(line -> line.matches("(->\\s+)?Sort\\b.*"))
                .anyMatch(line -> line.startsWith("->  Index Scan using " + pendingIndex + " on " + STALE + " c ")
                        && line.contains("(actual rows=200 "));
        // Negative control: without the settings these statistics give the plan that reads and
        // sorts every pending row, so the assertion above can fail.
        assertThat(explainClaim(stale, false))
                .as("the claim's plan without the settings")
                .anyMatch(line -> line.contains("Sort Key: c.id"))
                .anyMatch(line -> line.contains(" on " + STALE + " c ") && line.contains("(actual rows=20000 "));
    }

    @Test
    void theClaimTakesTheOldestHeadsUnderStaleStatisticsAndLeavesTheConnectionsSettingsAsTheyWere()
            throws SQLException {
        staleTable();
        // One connection for every claim and for the check: the settings must end with the claim.
        SingleConnectionDataSource single = new SingleConnectionDataSource(dataSource.getConnection(), true);
        try {
            OutboxTable stale =
                    OutboxTable.builder(single).tableName(STALE).clock(clock).build();
            RecordingPublisher sent = new RecordingPublisher();
            OutboxDispatcher dispatcher = OutboxDispatcher.builder(stale, sent)
                    .jitter(() -> 0)
                    .batchSize(200)
                    .build();

            assertThat(dispatcher.dispatchOnce().sent()).isEqualTo(200);
            assertThat(dispatcher
                            .dispatchAmong(LongStream.rangeClosed(10_201, 10_400)
                                    .boxed()
                                    .toList())
                            .sent())
                    .isEqualTo(200);

            // The first pending row of each of the 1,000 aggregates, oldest first.
            assertThat(sent.sentIds())
                    .containsExactlyElementsOf(
                            LongStream.rangeClosed(10_001, 10_400).boxed().toList());
            JdbcTemplate check = new JdbcTemplate(single);
            assertThat(List.of("enable_sort", "enable_hashjoin", "enable_mergejoin", "enable_seqscan"))
                    .allSatisfy(setting -> assertThat(check.queryForObject("SHOW " + setting, String.class))
                            .as(setting)
                            .isEqualTo("on"));
        } finally {
            single.destroy();
        }
    }

    @Test
    void statisticsTakenWhileEveryRowWasDispatchedAreRefreshedBeforeTheNextClaim() throws SQLException {
        OutboxTable stale = tableAnalyzedWhileEveryRowWasDispatched();
        // Negative control: under these statistics the plan settings alone leave the order gate's
        // probe scanning the pending index whole for each candidate.
        assertThat(explainClaim(stale, true))
                .as("the claim's plan before the refresh")
                .noneMatch(PostgresOutboxDispatcherIntegrationTests::probesTheAggregate)
                .anyMatch(line -> line.startsWith("->  Index Scan using ")
                        && line.contains(" on " + STALE + " e ")
                        && line.contains("(actual rows=30000 "));
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        OutboxDispatcher dispatcher = OutboxDispatcher.builder(stale, publisher)
                .jitter(() -> 0)
                .statisticsCheckInterval(Duration.ofMillis(1))
                .meterRegistry(registry)
                .build();

        // The first claim takes 200 rows; the check before the second finds fewer counted.
        assertThat(dispatcher.dispatchOnce().sent()).isEqualTo(200);
        assertThat(dispatcher.dispatchOnce().sent()).isEqualTo(200);

        assertThat(registry.get("outbox.statistics.refreshes").counter().count())
                .isOne();
        assertThat(pendingShareInStatistics()).isGreaterThan(0.5);
        assertThat(explainClaim(stale, true))
                .as("the claim's plan after the refresh")
                .anyMatch(PostgresOutboxDispatcherIntegrationTests::probesTheAggregate);
        // Statistics that count the pending rows are left alone.
        assertThat(dispatcher.dispatchOnce().sent()).isEqualTo(200);
        assertThat(registry.get("outbox.statistics.refreshes").counter().count())
                .isOne();
        assertThat(publisher.sentIds())
                .containsExactlyElementsOf(
                        LongStream.rangeClosed(20_001, 20_600).boxed().toList());
    }

    @Test
    void aZeroStatisticsCheckIntervalNeverRefreshesTheStatistics() {
        OutboxTable stale = tableAnalyzedWhileEveryRowWasDispatched();
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        OutboxDispatcher dispatcher = OutboxDispatcher.builder(stale, publisher)
                .jitter(() -> 0)
                .statisticsCheckInterval(Duration.ZERO)
                .meterRegistry(registry)
                .build();

        assertThat(dispatcher.dispatchOnce().sent()).isEqualTo(200);
        assertThat(dispatcher.dispatchOnce().sent()).isEqualTo(200);

        assertThat(registry.get("outbox.statistics.refreshes").counter().count())
                .isZero();
        assertThat(pendingShareInStatistics()).isZero();
    }

    @Test
    void aUserWhoDoesNotOwnTheOutboxGetsOneWarningAndNoRefresh() throws SQLException {
        tableAnalyzedWhileEveryRowWasDispatched();
        // Roles are the server's, not the database's: created once, kept.
        jdbc.execute("DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'sumi_outbox_not_owner')"
                + " THEN CREATE ROLE sumi_outbox_not_owner LOGIN PASSWORD 'sumi'; END IF; END $$");
        jdbc.execute("GRANT SELECT, UPDATE ON " + STALE + " TO sumi_outbox_not_owner");
        String url;
        try (Connection connection = dataSource.getConnection()) {
            url = connection.getMetaData().getURL();
        }
        DataSource notOwner = new DriverManagerDataSource(url, "sumi_outbox_not_owner", "sumi");
        OutboxTable stale =
                OutboxTable.builder(notOwner).tableName(STALE).clock(clock).build();
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        OutboxDispatcher dispatcher = OutboxDispatcher.builder(stale, publisher)
                .jitter(() -> 0)
                .statisticsCheckInterval(Duration.ofMillis(1))
                .meterRegistry(registry)
                .build();
        ch.qos.logback.classic.Logger logger =
                (ch.qos.logback.classic.Logger) LoggerFactory.getLogger(StatisticsCheck.class);
        ListAppender<ILoggingEvent> logged = new ListAppender<>();
        logged.start();
        logger.addAppender(logged);
        try {
            for (int round = 0; round < 3; round++) {
                assertThat(dispatcher.dispatchOnce().sent()).isEqualTo(200);
                Thread.sleep(2); // past the check interval
            }
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new AssertionError(ex);
        } finally {
            logger.detachAppender(logged);
        }

        assertThat(registry.get("outbox.statistics.refreshes").counter().count())
                .isZero();
        assertThat(pendingShareInStatistics()).isZero();
        assertThat(logged.list)
                .filteredOn(event -> event.getLevel() == Level.WARN)
                .singleElement()
                .satisfies(event ->
                        assertThat(event.getFormattedMessage()).contains(STALE, "ANALYZE needs the table's owner"));
    }
}
