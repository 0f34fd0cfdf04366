package io.sumi.benchmarks;

import static io.sumi.benchmarks.LedgerCases.CONSUMER;
import static io.sumi.benchmarks.LedgerCases.expect;

import io.sumi.benchmarks.BenchmarkCase.Operation;
import io.sumi.benchmarks.BenchmarkCase.Role;
import io.sumi.benchmarks.LedgerCases.LedgerTableCase;
import io.sumi.jdbc.DatabaseType;
import io.sumi.store.ClaimOutcome;
import io.sumi.store.ClaimRequest;
import io.sumi.store.ClaimResult;
import io.sumi.store.ProcessedMessageStore;
import io.sumi.store.jdbc.internal.LedgerDialect;
import java.lang.reflect.Field;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import javax.sql.DataSource;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The {@code probes} suite: takes Sumi's per-id cost apart. Each probe runs one piece on one
 * connection held for the whole case (no pool checkout, no Spring), so the difference between
 * two probes is the cost of one thing: the transaction, Sumi's SQL, the framework around it, or
 * an alternative statement.
 *
 * <p>The SQL of Sumi's claims is read from PostgreSQL's {@link LedgerDialect} itself (its private
 * fields), so the probes run exactly what the store runs.
 */
final class ProbeCases {

    private static final String COLUMNS =
            "consumer, message_id, status, claim_token, lease_until, attempts, fingerprint, last_error, first_seen_at, processed_at";

    /** The lease the claims bind, in microseconds (LedgerCases.LEASE). */
    private static final long LEASE_MICROS = LedgerCases.LEASE.toNanos() / 1_000;

    private ProbeCases() {}

    static List<BenchmarkCase> all() {
        List<BenchmarkCase> cases = new ArrayList<>();
        cases.add(LedgerCases.rawInsert());
        cases.add(jdbcTransaction());
        cases.add(LedgerCases.rawInsertInTransaction());
        cases.add(sumiSqlTransactional());
        cases.add(returningTransactional());
        cases.add(LedgerCases.sumiTransactionalStore());
        cases.add(handlerTransaction(false));
        cases.add(handlerTransaction(true));
        cases.add(sumiSqlLease(false));
        cases.add(sumiSqlLease(true));
        cases.add(LedgerCases.sumiLeaseStore());
        cases.add(LedgerCases.rawInsertUnnest(100));
        for (int size : new int[] {100, 500}) {
            cases.add(previousBatch(size));
            cases.add(sumiSqlBatch(size, false));
            cases.add(sumiSqlBatch(size, true));
            cases.add(fixedBatch(size));
        }
        cases.add(sumiSqlBatchAsynchronousClaim(500));
        for (int fillfactor : new int[] {100, 80, 70, 60, 50}) {
            cases.add(hotCompletionLayout(fillfactor));
        }
        cases.add(pollStatement(500));
        cases.add(LedgerCases.springIntegration());
        cases.add(LedgerCases.springIntegration(true));
        return cases;
    }

    // ------------------------------------------------------------------ helpers

    private static final Map<String, String> SQL = new ConcurrentHashMap<>();

    static String dialectSql(String table, String field) {
        return dialectSql(table, field, false);
    }

    /** {@link #dialectSql(String, String)} of the dialect made with {@code asynchronousClaimCommit}. */
    static String dialectSql(String table, String field, boolean asynchronousClaimCommit) {
        return SQL.computeIfAbsent(
                table + "#" + field + "#" + asynchronousClaimCommit,
                k -> readDialectSql(table, field, asynchronousClaimCommit));
    }

    private static String readDialectSql(String table, String field, boolean asynchronousClaimCommit) {
        try {
            LedgerDialect dialect = LedgerDialect.of(DatabaseType.POSTGRESQL, table, asynchronousClaimCommit);
            Field f = dialect.getClass().getDeclaredField(field);
            f.setAccessible(true);
            return (String) f.get(dialect);
        } catch (ReflectiveOperationException ex) {
            throw new IllegalStateException("PostgreSQL's LedgerDialect." + field + " is gone; update the probes", ex);
        }
    }

    /** LedgerDialect.complete's statement, as the store builds it for {@code count} ids. */
    static String completeSql(String table, int count) {
        return "UPDATE " + table + " SET status = 'COMPLETED', processed_at = ?, lease_until = NULL, last_error = NULL"
                + " WHERE consumer = ? AND claim_token = ? AND status = 'IN_PROGRESS' AND message_id IN ("
                + String.join(", ", Collections.nCopies(count, "?")) + ")";
    }

    static void setNow(PreparedStatement statement, int index, OffsetDateTime time) throws SQLException {
        statement.setObject(index, time, Types.TIMESTAMP_WITH_TIMEZONE);
    }

    static int countRows(PreparedStatement statement) throws SQLException {
        int rows = 0;
        try (ResultSet rs = statement.executeQuery()) {
            while (rs.next()) {
                rows++;
            }
        }
        return rows;
    }

    /** The store's batch lease claim ({@code claim}: PostgreSQL's claimManyLease) of new ids. */
    static void claimBatch(Connection connection, String claim, List<String> batch, long token) throws SQLException {
        try (PreparedStatement s = connection.prepareStatement(claim)) {
            s.setString(1, CONSUMER);
            s.setLong(2, token);
            s.setLong(3, LEASE_MICROS);
            s.setArray(4, connection.createArrayOf("varchar", batch.toArray()));
            s.setArray(5, connection.createArrayOf("varchar", new String[batch.size()]));
            expect(countRows(s) == batch.size(), "batch claim of new ids");
        }
    }

    /** The store's batch complete (LedgerDialect.complete on PostgreSQL: the ids as one array). */
    static void completeBatch(Connection connection, String table, List<String> batch, long token) throws SQLException {
        String complete = "UPDATE " + table + " SET status = 'COMPLETED', processed_at = statement_timestamp(),"
                + " lease_until = NULL, last_error = NULL"
                + " WHERE consumer = ? AND claim_token = ? AND status = 'IN_PROGRESS' AND message_id = ANY(?::varchar[])";
        try (PreparedStatement s = connection.prepareStatement(complete)) {
            s.setString(1, CONSUMER);
            s.setLong(2, token);
            s.setArray(3, connection.createArrayOf("varchar", batch.toArray()));
            expect(s.executeUpdate() == batch.size(), "batch complete");
        }
    }

    /** A probe on one connection held for the whole case. */
    abstract static class HeldConnectionProbe extends LedgerTableCase {

        private final boolean autoCommit;
        private final String sessionSetting;

        HeldConnectionProbe(String id, String label, boolean autoCommit, String sessionSetting) {
            super(id, label, Role.REFERENCE);
            this.autoCommit = autoCommit;
            this.sessionSetting = sessionSetting;
        }

        abstract int run(Connection connection, Ids ids, long token) throws SQLException;

        @Override
        Operation open(DataSource dataSource, Ids ids) throws SQLException {
            Connection connection = dataSource.getConnection();
            if (sessionSetting != null) {
                try (Statement s = connection.createStatement()) {
                    s.execute(sessionSetting);
                }
            }
            connection.setAutoCommit(autoCommit);
            return new Operation() {
                long token;

                @Override
                public int run() throws SQLException {
                    int n = HeldConnectionProbe.this.run(connection, ids, ++token);
                    if (!autoCommit) {
                        connection.commit();
                    }
                    return n;
                }

                @Override
                public void close() throws SQLException {
                    if (sessionSetting != null) {
                        try (Statement s = connection.createStatement()) {
                            s.execute("RESET ALL");
                        }
                    }
                    connection.setAutoCommit(true);
                    connection.close();
                }
            };
        }
    }

    // ------------------------------------------------------------------ transactional mode

    /** The raw insert in a plain JDBC transaction (autocommit off, commit per id): the transaction's own cost. */
    static BenchmarkCase jdbcTransaction() {
        return new HeldConnectionProbe("jdbc-tx", "raw INSERT, JDBC commit per id (no Spring, no pool)", false, null) {
            @Override
            int run(Connection connection, Ids ids, long token) throws SQLException {
                try (PreparedStatement s = connection.prepareStatement(LedgerCases.rawInsertSql(table()))) {
                    LedgerCases.bindRawInsert(s, ids.next(), token);
                    expect(s.executeUpdate() == 1, "insert of a new id");
                }
                return 1;
            }
        };
    }

    /** Sumi's transactional claim statement (claimOneCompleted), plain JDBC, commit per id. */
    static BenchmarkCase sumiSqlTransactional() {
        return new HeldConnectionProbe("sumi-sql-tx", "Sumi's claimOneCompleted SQL, JDBC commit per id", false, null) {
            @Override
            int run(Connection connection, Ids ids, long token) throws SQLException {
                String id = ids.next();
                try (PreparedStatement s = connection.prepareStatement(dialectSql(table(), "claimOneCompleted"))) {
                    s.setString(1, CONSUMER);
                    s.setString(2, id);
                    s.setLong(3, token);
                    s.setString(4, null);
                    s.setString(5, CONSUMER);
                    s.setString(6, id);
                    expect(countRows(s) == 1, "claim of a new id");
                }
                return 1;
            }
        };
    }

    /** The claim as one INSERT ... ON CONFLICT DO UPDATE ... WHERE ... RETURNING, without the CTE and the UNION ALL read. */
    static BenchmarkCase returningTransactional() {
        return new HeldConnectionProbe(
                "returning-tx", "INSERT..ON CONFLICT..RETURNING (no CTE), JDBC commit per id", false, null) {
            @Override
            int run(Connection connection, Ids ids, long token) throws SQLException {
                OffsetDateTime now = OffsetDateTime.now(ZoneOffset.UTC);
                String sql = "INSERT INTO " + table()
                        + " AS pm (consumer, message_id, status, claim_token, lease_until, attempts,"
                        + " fingerprint, first_seen_at, processed_at) VALUES (?, ?, 'COMPLETED', ?, NULL, 1, ?, ?, ?)"
                        + " ON CONFLICT (consumer, message_id) DO UPDATE SET status = 'COMPLETED', claim_token = EXCLUDED.claim_token,"
                        + " lease_until = NULL, attempts = pm.attempts + 1, processed_at = EXCLUDED.processed_at"
                        + " WHERE pm.status = 'IN_PROGRESS' AND pm.lease_until <= ? RETURNING " + COLUMNS;
                try (PreparedStatement s = connection.prepareStatement(sql)) {
                    s.setString(1, CONSUMER);
                    s.setString(2, ids.next());
                    s.setLong(3, token);
                    s.setString(4, null);
                    setNow(s, 5, now);
                    setNow(s, 6, now);
                    setNow(s, 7, now);
                    expect(countRows(s) == 1, "claim of a new id");
                }
                return 1;
            }
        };
    }

    /**
     * What transactional mode costs a handler that writes a row anyway: one Spring transaction per
     * message with the handler's INSERT, without and with Sumi's claim in the same transaction.
     */
    static BenchmarkCase handlerTransaction(boolean withSumi) {
        String id = withSumi ? "handler-tx-sumi" : "handler-tx";
        String label = withSumi
                ? "handler INSERT + Sumi claimCompleted, one tx per message"
                : "handler INSERT alone, one tx per message (no ledger)";
        return new LedgerTableCase(id, label, Role.REFERENCE) {
            String orders() {
                return schema() + ".orders";
            }

            @Override
            void createTables(Connection connection) throws SQLException {
                super.createTables(connection);
                try (Statement s = connection.createStatement()) {
                    s.execute("CREATE TABLE " + orders() + " (id VARCHAR(64) PRIMARY KEY, payload TEXT NOT NULL)");
                }
            }

            @Override
            List<String> tables() {
                return List.of(table(), orders());
            }

            @Override
            String countQuery() {
                return "SELECT count(*) FROM " + orders();
            }

            @Override
            Operation open(DataSource dataSource, Ids ids) {
                ProcessedMessageStore store = store(dataSource);
                TransactionTemplate tx = new TransactionTemplate(new DataSourceTransactionManager(dataSource));
                JdbcTemplate jdbc = new JdbcTemplate(dataSource);
                String insert = "INSERT INTO " + orders() + " (id, payload) VALUES (?, ?)";
                return () -> {
                    String messageId = ids.next();
                    tx.executeWithoutResult(status -> {
                        if (withSumi) {
                            ClaimResult claim = store.claimCompleted(CONSUMER, new ClaimRequest(messageId, null));
                            expect(claim.outcome() == ClaimOutcome.CLAIMED, "claim of a new id");
                        }
                        jdbc.update(insert, messageId, LedgerCases.PAYLOAD);
                    });
                    return 1;
                };
            }
        };
    }

    // ------------------------------------------------------------------ lease mode

    /** Sumi's lease claim (claimOneLease) and complete statements, plain JDBC autocommit; optionally with synchronous_commit off. */
    static BenchmarkCase sumiSqlLease(boolean asyncCommit) {
        String id = asyncCommit ? "lease-sql-async" : "lease-sql";
        String label = asyncCommit
                ? "Sumi's lease claim + complete SQL, synchronous_commit=off"
                : "Sumi's lease claim + complete SQL, JDBC autocommit";
        return new HeldConnectionProbe(id, label, true, asyncCommit ? "SET synchronous_commit TO off" : null) {
            @Override
            int run(Connection connection, Ids ids, long token) throws SQLException {
                OffsetDateTime now = OffsetDateTime.now(ZoneOffset.UTC);
                String messageId = ids.next();
                try (PreparedStatement s = connection.prepareStatement(dialectSql(table(), "claimOneLease"))) {
                    s.setString(1, CONSUMER);
                    s.setString(2, messageId);
                    s.setLong(3, token);
                    s.setLong(4, LEASE_MICROS);
                    s.setString(5, null);
                    s.setString(6, CONSUMER);
                    s.setString(7, messageId);
                    expect(countRows(s) == 1, "claim of a new id");
                }
                try (PreparedStatement s = connection.prepareStatement(completeSql(table(), 1))) {
                    setNow(s, 1, now);
                    s.setString(2, CONSUMER);
                    s.setLong(3, token);
                    s.setString(4, messageId);
                    expect(s.executeUpdate() == 1, "complete of a fresh claim");
                }
                return 1;
            }
        };
    }

    // ------------------------------------------------------------------ batches

    /**
     * Sumi's batch lease claim (claimManyLease) and the store's complete statement, plain JDBC
     * autocommit. With {@code customPlans}, the session plans every execution afresh
     * ({@code plan_cache_mode = force_custom_plan}) instead of reusing the generic plan that
     * PostgreSQL caches after five executions.
     */
    static BenchmarkCase sumiSqlBatch(int size, boolean customPlans) {
        String id = "batch-sql-" + size + (customPlans ? "-custom" : "");
        String label =
                "Sumi's claimAll + completeAll SQL, " + size + " ids" + (customPlans ? ", force_custom_plan" : "");
        return claimAndCompleteBatch(
                id, label, size, customPlans ? "SET plan_cache_mode TO force_custom_plan" : null, false);
    }

    /**
     * {@link #sumiSqlBatch} with {@code sumi.ledger.asynchronous-claim-commit}: the claim commits
     * without waiting for the WAL flush, the completion with it. What the poll claim runs per poll
     * with that option today: two statements, one flush.
     */
    static BenchmarkCase sumiSqlBatchAsynchronousClaim(int size) {
        return claimAndCompleteBatch(
                "batch-sql-" + size + "-async",
                "Sumi's claimAll (asynchronous commit) + completeAll SQL, " + size + " ids",
                size,
                null,
                true);
    }

    /**
     * {@link #sumiSqlBatch} of 500 ids on a ledger laid out so that the completion can be a HOT
     * update (no index entry written, the new version on the old one's page): the three partial
     * indexes, whose predicates name {@code status} and whose keys are {@code lease_until} and
     * {@code processed_at}, replaced by one index on {@code first_seen_at}, which no update
     * changes, and {@code fillfactor} leaving room on each page for the completed versions. The
     * next lever of issue 23, part 1, measured before any design of it: this is not Sumi's schema,
     * because the oldest-live-claim gauge, the held count and the pruning of abandoned claims find
     * in-progress rows through those indexes (docs/benchmarks.md, "A HOT completion, measured").
     */
    static BenchmarkCase hotCompletionLayout(int fillfactor) {
        int size = 500;
        return new HeldConnectionProbe(
                "batch-sql-" + size + "-hot-" + fillfactor,
                "the same on a ledger with HOT completions, fillfactor " + fillfactor,
                true,
                null) {
            @Override
            void createTables(Connection connection) throws SQLException {
                super.createTables(connection);
                try (Statement s = connection.createStatement()) {
                    s.execute("DROP INDEX processed_messages_prune_idx");
                    s.execute("DROP INDEX processed_messages_abandoned_idx");
                    s.execute("DROP INDEX processed_messages_reconcile_idx");
                    s.execute("CREATE INDEX processed_messages_age_idx ON processed_messages (first_seen_at)");
                    s.execute("ALTER TABLE processed_messages SET (fillfactor = " + fillfactor + ")");
                }
            }

            @Override
            int run(Connection connection, Ids ids, long token) throws SQLException {
                return claimThenComplete(connection, table(), ids, size, token, false);
            }
        };
    }

    /** The store's claimManyLease then its complete of {@code size} new ids, autocommit. */
    private static BenchmarkCase claimAndCompleteBatch(
            String id, String label, int size, String sessionSetting, boolean asynchronousClaimCommit) {
        return new HeldConnectionProbe(id, label, true, sessionSetting) {
            @Override
            int run(Connection connection, Ids ids, long token) throws SQLException {
                return claimThenComplete(connection, table(), ids, size, token, asynchronousClaimCommit);
            }
        };
    }

    private static int claimThenComplete(
            Connection connection, String table, Ids ids, int size, long token, boolean asynchronousClaimCommit)
            throws SQLException {
        List<String> batch = ids.next(size);
        Collections.sort(batch);
        claimBatch(connection, dialectSql(table, "claimManyLease", asynchronousClaimCommit), batch, token);
        completeBatch(connection, table, batch, token);
        return size;
    }

    /**
     * The candidate of issue 23, part 1, for one statement per poll: the completions of the previous
     * batch written by the statement that claims the next one (data-modifying CTEs: one transaction,
     * one WAL flush). A key of the previous batch must be left out of the claim (a statement cannot
     * write one row twice); the caller knows both lists, so that is done before the statement is
     * sent (a {@code <> ALL(previous)} filter in the statement cost 500 x 500 comparisons a batch),
     * and the probe's ids are all new. Each run claims {@code size}
     * new ids and completes the ones the run before it claimed, so in the steady state it does the
     * writes of {@link #sumiSqlBatch} in one round trip and one commit instead of two (it counts the
     * ids it completed, one batch behind its claims). It measures
     * what building that candidate could gain, before it is built.
     */
    static BenchmarkCase pollStatement(int size) {
        return new HeldConnectionProbe(
                "poll-statement-" + size,
                "complete the previous " + size + " ids and claim " + size + " new ones in one statement",
                true,
                null) {
            private List<String> previous = List.of();
            private long previousToken;

            @Override
            int run(Connection connection, Ids ids, long token) throws SQLException {
                if (token == 1) {
                    previous = List.of(); // a new round: a new connection and a new table
                }
                List<String> batch = ids.next(size);
                Collections.sort(batch);
                String statement = "WITH completed AS ("
                        + " UPDATE " + table() + " SET status = 'COMPLETED', processed_at = statement_timestamp(),"
                        + " lease_until = NULL, last_error = NULL"
                        + " WHERE consumer = ? AND claim_token = ? AND status = 'IN_PROGRESS'"
                        + " AND message_id = ANY(?::varchar[]) RETURNING message_id),"
                        + " claimed AS (INSERT INTO " + table()
                        + " AS pm (consumer, message_id, status, claim_token, lease_until, attempts, fingerprint,"
                        + " first_seen_at, processed_at)"
                        + " SELECT ?, i.message_id, 'IN_PROGRESS', ?, (statement_timestamp() + CAST(? AS BIGINT)"
                        + " * INTERVAL '1 microsecond'), 1, i.fingerprint, statement_timestamp(), NULL"
                        + " FROM unnest(?::varchar[], ?::varchar[]) AS i(message_id, fingerprint)"
                        + " ORDER BY i.message_id"
                        + " ON CONFLICT (consumer, message_id) DO UPDATE SET claim_token = EXCLUDED.claim_token,"
                        + " lease_until = EXCLUDED.lease_until, attempts = pm.attempts + 1"
                        + " WHERE pm.status = 'IN_PROGRESS' AND pm.lease_until <= statement_timestamp()"
                        + " RETURNING pm.consumer, pm.message_id, pm.status, pm.claim_token, pm.lease_until,"
                        + " pm.attempts, pm.fingerprint, pm.last_error, pm.first_seen_at, pm.processed_at)"
                        + " SELECT 'C', message_id, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM completed"
                        + " UNION ALL SELECT 'L', " + COLUMNS + " FROM claimed";
                Array previousIds = connection.createArrayOf("varchar", previous.toArray());
                int completed = 0;
                int claimed = 0;
                try (PreparedStatement s = connection.prepareStatement(statement)) {
                    s.setString(1, CONSUMER);
                    s.setLong(2, previousToken);
                    s.setArray(3, previousIds);
                    s.setString(4, CONSUMER);
                    s.setLong(5, token);
                    s.setLong(6, LEASE_MICROS);
                    s.setArray(7, connection.createArrayOf("varchar", batch.toArray()));
                    s.setArray(8, connection.createArrayOf("varchar", new String[size]));
                    try (ResultSet rs = s.executeQuery()) {
                        while (rs.next()) {
                            if ("C".equals(rs.getString(1))) {
                                completed++;
                            } else {
                                claimed++;
                            }
                        }
                    }
                }
                expect(completed == previous.size(), "completion of the previous batch");
                expect(claimed == size, "batch claim of new ids");
                previous = batch;
                previousToken = token;
                // The ids this run completed: the harness counts the completed rows of the table,
                // and the last batch claimed stays in progress.
                return completed;
            }
        };
    }

    /**
     * The batch lease claim before issue 12 (up to fbe836f): the rows it did not claim read in the
     * same statement, by a join of the input with the ledger (the branch behind the cold-table
     * trap), then the store's complete. Side by side with {@code batch-sql-*} (the current claim),
     * so one run shows old and new.
     */
    static BenchmarkCase previousBatch(int size) {
        return new HeldConnectionProbe(
                "batch-previous-" + size,
                "claimAll SQL before issue 12 (UNION ALL join) + complete, " + size + " ids",
                true,
                null) {
            @Override
            int run(Connection connection, Ids ids, long token) throws SQLException {
                List<String> batch = ids.next(size);
                Collections.sort(batch);
                Array idArray = connection.createArrayOf("varchar", batch.toArray());
                Array fingerprints = connection.createArrayOf("varchar", new String[size]);
                String claim =
                        "WITH input AS (SELECT * FROM unnest(?::varchar[], ?::varchar[]) AS i(message_id, fingerprint)),"
                                + " claimed AS (INSERT INTO " + table()
                                + " AS pm (consumer, message_id, status, claim_token, lease_until, attempts, fingerprint,"
                                + " first_seen_at, processed_at)"
                                + " SELECT ?, i.message_id, 'IN_PROGRESS', ?, (statement_timestamp() + CAST(? AS BIGINT)"
                                + " * INTERVAL '1 microsecond'), 1, i.fingerprint, statement_timestamp(), NULL"
                                + " FROM input i ORDER BY i.message_id"
                                + " ON CONFLICT (consumer, message_id) DO UPDATE SET claim_token = EXCLUDED.claim_token,"
                                + " lease_until = EXCLUDED.lease_until, attempts = pm.attempts + 1"
                                + " WHERE pm.status = 'IN_PROGRESS' AND pm.lease_until <= statement_timestamp()"
                                + " RETURNING pm.consumer, pm.message_id, pm.status, pm.claim_token, pm.lease_until, pm.attempts,"
                                + " pm.fingerprint, pm.last_error, pm.first_seen_at, pm.processed_at)"
                                + " SELECT " + COLUMNS
                                + " FROM claimed UNION ALL SELECT t.consumer, t.message_id, t.status,"
                                + " t.claim_token, t.lease_until, t.attempts, t.fingerprint, t.last_error, t.first_seen_at,"
                                + " t.processed_at FROM input i JOIN " + table()
                                + " t ON t.consumer = ? AND t.message_id = i.message_id"
                                + " WHERE NOT EXISTS (SELECT 1 FROM claimed c WHERE c.message_id = i.message_id)";
                try (PreparedStatement s = connection.prepareStatement(claim)) {
                    s.setArray(1, idArray);
                    s.setArray(2, fingerprints);
                    s.setString(3, CONSUMER);
                    s.setLong(4, token);
                    s.setLong(5, LEASE_MICROS);
                    s.setString(6, CONSUMER);
                    expect(countRows(s) == size, "batch claim of new ids");
                }
                completeBatch(connection, table(), batch, token);
                return size;
            }
        };
    }

    /**
     * The suggested batch: the claim as INSERT ... SELECT FROM unnest ... ON CONFLICT DO UPDATE ...
     * WHERE ... RETURNING, without the UNION ALL read of existing rows (rows not returned are read
     * in a second statement, only when there are any: the store already does this for the race it
     * documents), and the complete with {@code message_id = ANY(?)}: one statement text whatever
     * the batch size instead of one per size with a bind parameter per id.
     */
    static BenchmarkCase fixedBatch(int size) {
        return new HeldConnectionProbe(
                "batch-fixed-" + size, "suggested: INSERT..RETURNING + complete ANY(?), " + size + " ids", true, null) {
            @Override
            int run(Connection connection, Ids ids, long token) throws SQLException {
                OffsetDateTime now = OffsetDateTime.now(ZoneOffset.UTC);
                List<String> batch = ids.next(size);
                Collections.sort(batch);
                Array idArray = connection.createArrayOf("varchar", batch.toArray());
                Array fingerprints = connection.createArrayOf("varchar", new String[size]);
                String claim = "INSERT INTO " + table()
                        + " AS pm (consumer, message_id, status, claim_token, lease_until, attempts,"
                        + " fingerprint, first_seen_at, processed_at)"
                        + " SELECT ?, i.message_id, 'IN_PROGRESS', ?, ?, 1, i.fingerprint, ?, NULL"
                        + " FROM unnest(?::varchar[], ?::varchar[]) AS i(message_id, fingerprint) ORDER BY i.message_id"
                        + " ON CONFLICT (consumer, message_id) DO UPDATE SET claim_token = EXCLUDED.claim_token,"
                        + " lease_until = EXCLUDED.lease_until, attempts = pm.attempts + 1"
                        + " WHERE pm.status = 'IN_PROGRESS' AND pm.lease_until <= ? RETURNING " + COLUMNS;
                try (PreparedStatement s = connection.prepareStatement(claim)) {
                    s.setString(1, CONSUMER);
                    s.setLong(2, token);
                    setNow(s, 3, now.plusMinutes(5));
                    setNow(s, 4, now);
                    s.setArray(5, idArray);
                    s.setArray(6, fingerprints);
                    setNow(s, 7, now);
                    expect(countRows(s) == size, "batch claim of new ids");
                }
                String complete =
                        "UPDATE " + table() + " SET status = 'COMPLETED', processed_at = ?, lease_until = NULL,"
                                + " last_error = NULL WHERE consumer = ? AND message_id = ANY(?::varchar[]) AND claim_token = ?"
                                + " AND status = 'IN_PROGRESS'";
                try (PreparedStatement s = connection.prepareStatement(complete)) {
                    setNow(s, 1, now);
                    s.setString(2, CONSUMER);
                    s.setArray(3, idArray);
                    s.setLong(4, token);
                    expect(s.executeUpdate() == size, "batch complete");
                }
                return size;
            }
        };
    }
}
