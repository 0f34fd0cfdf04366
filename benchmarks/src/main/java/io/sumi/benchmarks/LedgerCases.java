package io.sumi.benchmarks;

import io.sumi.benchmarks.BenchmarkCase.Operation;
import io.sumi.benchmarks.BenchmarkCase.Role;
import io.sumi.consumer.HandlerDefinition;
import io.sumi.consumer.HandlerResult;
import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentExecutor;
import io.sumi.consumer.InboundMessage;
import io.sumi.consumer.MessageOutcome;
import io.sumi.consumer.TransactionSupport;
import io.sumi.jdbc.DatabaseType;
import io.sumi.store.ClaimOutcome;
import io.sumi.store.ClaimRequest;
import io.sumi.store.ClaimResult;
import io.sumi.store.ProcessedMessageStore;
import io.sumi.store.jdbc.JdbcProcessedMessageStore;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.apache.camel.processor.idempotent.jdbc.JdbcMessageIdRepository;
import org.springframework.integration.jdbc.metadata.JdbcMetadataStore;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The cases of the {@code ledger} suite: the physical limit, Sumi in each mode, and the peers.
 */
final class LedgerCases {

    static final String CONSUMER = "bench-consumer";

    static final Duration LEASE = Duration.ofMinutes(5);

    /** A payload of ~200 bytes for the executor cases, so they pay for the fingerprint (SHA-256) as a real message does. */
    static final String PAYLOAD = "{\"orderId\":\"" + "x".repeat(160) + "\",\"amount\":\"12.50\",\"currency\":\"EUR\"}";

    private LedgerCases() {}

    static List<BenchmarkCase> all() {
        List<BenchmarkCase> cases = new ArrayList<>();
        cases.add(rawInsert());
        cases.add(rawInsertInTransaction());
        cases.add(rawInsertUnnest(100));
        cases.add(sumiTransactionalStore());
        cases.add(sumiTransactionalExecutor());
        cases.add(sumiLeaseStore());
        cases.add(sumiLeaseExecutor());
        cases.add(sumiLeaseExecutor(false));
        cases.add(sumiBatchLease(100));
        cases.add(sumiBatchLease(500));
        cases.add(sumiBatchTransactional(100));
        cases.add(camel());
        cases.add(springIntegration());
        return cases;
    }

    // ------------------------------------------------------------------ tables

    /** A case whose tables are Sumi's ledger, created by Sumi's own migration. */
    abstract static class LedgerTableCase extends BenchmarkCase {

        LedgerTableCase(String id, String label, Role role) {
            super(id, label, role);
        }

        String table() {
            return schema() + ".processed_messages";
        }

        @Override
        void createTables(Connection connection) throws SQLException {
            try (Statement s = connection.createStatement()) {
                s.execute(BenchDatabase.ledgerMigration()); // runs with search_path = the case's schema
            }
        }

        @Override
        List<String> tables() {
            return List.of(table());
        }

        @Override
        String countQuery() {
            return "SELECT count(*) FROM " + table() + " WHERE status = 'COMPLETED'";
        }

        JdbcProcessedMessageStore store(DataSource dataSource) {
            return JdbcProcessedMessageStore.builder(dataSource)
                    .tableName(table())
                    .databaseType(DatabaseType.POSTGRESQL)
                    .build();
        }
    }

    /** The row a raw insert writes: the same columns a transactional-mode claim writes. */
    static String rawInsertSql(String table) {
        return "INSERT INTO " + table
                + " (consumer, message_id, status, claim_token, attempts, first_seen_at, processed_at)"
                + " VALUES (?, ?, 'COMPLETED', ?, 1, ?, ?) ON CONFLICT DO NOTHING";
    }

    static void bindRawInsert(PreparedStatement statement, String id, long token) throws SQLException {
        OffsetDateTime now = OffsetDateTime.now(ZoneOffset.UTC);
        statement.setString(1, CONSUMER);
        statement.setString(2, id);
        statement.setLong(3, token);
        statement.setObject(4, now, Types.TIMESTAMP_WITH_TIMEZONE);
        statement.setObject(5, now, Types.TIMESTAMP_WITH_TIMEZONE);
    }

    static void expect(boolean condition, String what) {
        if (!condition) {
            throw new IllegalStateException("Unexpected result: " + what);
        }
    }

    /** As {@link #expect(boolean, String)}, building the message only on failure (never on the measured path). */
    static void expect(boolean condition, Supplier<String> what) {
        if (!condition) {
            throw new IllegalStateException("Unexpected result: " + what.get());
        }
    }

    // ------------------------------------------------------------------ raw JDBC

    /** a) The physical limit: one INSERT ... ON CONFLICT DO NOTHING per id, autocommit, one connection, one prepared statement. */
    static BenchmarkCase rawInsert() {
        return new LedgerTableCase("raw", "raw INSERT ON CONFLICT DO NOTHING, autocommit", Role.RAW) {
            @Override
            Operation open(DataSource dataSource, Ids ids) throws SQLException {
                Connection connection = dataSource.getConnection();
                PreparedStatement statement = connection.prepareStatement(rawInsertSql(table()));
                return new Operation() {
                    long token;

                    @Override
                    public int run() throws SQLException {
                        bindRawInsert(statement, ids.next(), ++token);
                        expect(statement.executeUpdate() == 1, "raw insert of a new id inserted nothing");
                        return 1;
                    }

                    @Override
                    public void close() throws SQLException {
                        statement.close();
                        connection.close();
                    }
                };
            }
        };
    }

    /** Reference: the same INSERT, one Spring transaction per id (BEGIN travels with the INSERT; COMMIT is a second round trip). */
    static BenchmarkCase rawInsertInTransaction() {
        return new LedgerTableCase("raw-tx", "raw INSERT in a TransactionTemplate per id", Role.REFERENCE) {
            // close() throws Exception: an operation closes whatever it opened (pools, threads); the
            // harness lets any failure, interruption included, end the run.
            @SuppressWarnings("try")
            @Override
            Operation open(DataSource dataSource, Ids ids) {
                TransactionTemplate tx = new TransactionTemplate(new DataSourceTransactionManager(dataSource));
                org.springframework.jdbc.core.JdbcTemplate jdbc =
                        new org.springframework.jdbc.core.JdbcTemplate(dataSource);
                String sql = rawInsertSql(table());
                return new Operation() {
                    long token;

                    @Override
                    public int run() {
                        String id = ids.next();
                        long t = ++token;
                        Integer n = tx.execute(status -> jdbc.update(sql, ps -> bindRawInsert(ps, id, t)));
                        expect(n != null && n == 1, "raw insert of a new id inserted nothing");
                        return 1;
                    }
                };
            }
        };
    }

    /** Reference: the physical limit of batching, {@code size} ids in one unnest INSERT, autocommit. */
    static BenchmarkCase rawInsertUnnest(int size) {
        return new LedgerTableCase(
                "raw-unnest-" + size, "raw INSERT ... unnest, " + size + " ids/statement, autocommit", Role.REFERENCE) {
            @Override
            Operation open(DataSource dataSource, Ids ids) throws SQLException {
                Connection connection = dataSource.getConnection();
                PreparedStatement statement = connection.prepareStatement(
                        "INSERT INTO " + table()
                                + " (consumer, message_id, status, claim_token, attempts, first_seen_at, processed_at)"
                                + " SELECT ?, i, 'COMPLETED', ?, 1, ?, ? FROM unnest(?::varchar[]) AS i ON CONFLICT DO NOTHING");
                return new Operation() {
                    long token;

                    @Override
                    public int run() throws SQLException {
                        OffsetDateTime now = OffsetDateTime.now(ZoneOffset.UTC);
                        Array array = connection.createArrayOf(
                                "varchar", ids.next(size).toArray());
                        statement.setString(1, CONSUMER);
                        statement.setLong(2, ++token);
                        statement.setObject(3, now, Types.TIMESTAMP_WITH_TIMEZONE);
                        statement.setObject(4, now, Types.TIMESTAMP_WITH_TIMEZONE);
                        statement.setArray(5, array);
                        expect(statement.executeUpdate() == size, "raw batch insert of new ids inserted fewer rows");
                        return size;
                    }

                    @Override
                    public void close() throws SQLException {
                        statement.close();
                        connection.close();
                    }
                };
            }
        };
    }

    // ------------------------------------------------------------------ Sumi

    /** b) Transactional mode through the store: one TransactionTemplate per id around claimCompleted. */
    static BenchmarkCase sumiTransactionalStore() {
        return new LedgerTableCase("sumi-tx", "Sumi transactional claim (store.claimCompleted in a tx)", Role.SUMI) {
            @Override
            Operation open(DataSource dataSource, Ids ids) {
                ProcessedMessageStore store = store(dataSource);
                TransactionTemplate tx = new TransactionTemplate(new DataSourceTransactionManager(dataSource));
                return () -> {
                    String id = ids.next();
                    ClaimResult result =
                            tx.execute(status -> store.claimCompleted(CONSUMER, new ClaimRequest(id, null)));
                    expect(
                            result != null && result.outcome() == ClaimOutcome.CLAIMED,
                            () -> "claimCompleted of a new id: " + result);
                    return 1;
                };
            }
        };
    }

    /** b) Transactional mode through the executor (no-op handler). */
    static BenchmarkCase sumiTransactionalExecutor() {
        return new LedgerTableCase("sumi-tx-exec", "Sumi transactional, IdempotentExecutor.execute", Role.SUMI) {
            @Override
            Operation open(DataSource dataSource, Ids ids) {
                IdempotentExecutor executor = IdempotentExecutor.builder(store(dataSource))
                        .transactionSupport(TransactionSupport.of(new DataSourceTransactionManager(dataSource)))
                        .build();
                HandlerDefinition handler = HandlerDefinition.builder(CONSUMER)
                        .mode(IdempotencyMode.TRANSACTIONAL)
                        .build();
                return () -> {
                    InboundMessage message =
                            InboundMessage.of(PAYLOAD, Map.of(HandlerDefinition.IDEMPOTENCY_KEY_HEADER, ids.next()));
                    HandlerResult<Object> result = executor.execute(handler, message, () -> null);
                    expect(result.outcome() == MessageOutcome.PROCESSED, () -> "executor on a new id: " + result);
                    return 1;
                };
            }
        };
    }

    /** c) Lease mode through the store: claim, then complete (two statements, two commits). */
    static BenchmarkCase sumiLeaseStore() {
        return new LedgerTableCase("sumi-lease", "Sumi lease claim + complete (store)", Role.SUMI) {
            @Override
            Operation open(DataSource dataSource, Ids ids) {
                ProcessedMessageStore store = store(dataSource);
                return () -> {
                    ClaimResult result = store.claim(CONSUMER, new ClaimRequest(ids.next(), null), LEASE);
                    expect(result.outcome() == ClaimOutcome.CLAIMED, () -> "claim of a new id: " + result);
                    expect(store.complete(result.message()), "complete of a fresh claim");
                    return 1;
                };
            }
        };
    }

    /** c) Lease mode through the executor (no-op handler), its lease renewed while the handler runs (the default). */
    static BenchmarkCase sumiLeaseExecutor() {
        return sumiLeaseExecutor(true);
    }

    /**
     * c') Lease mode through the executor, with or without lease renewal: side by side, the cost of
     * starting and stopping a renewal per message (a quick handler never reaches its first renewal).
     */
    static BenchmarkCase sumiLeaseExecutor(boolean renewal) {
        return new LedgerTableCase(
                renewal ? "sumi-lease-exec" : "sumi-lease-exec-no-renewal",
                "Sumi lease, IdempotentExecutor.execute" + (renewal ? "" : ", lease renewal off"),
                Role.SUMI) {
            @Override
            Operation open(DataSource dataSource, Ids ids) {
                IdempotentExecutor executor = IdempotentExecutor.builder(store(dataSource))
                        .leaseRenewal(renewal)
                        .build();
                HandlerDefinition handler = HandlerDefinition.builder(CONSUMER)
                        .mode(IdempotencyMode.LEASE)
                        .lease(LEASE)
                        .build();
                return () -> {
                    InboundMessage message =
                            InboundMessage.of(PAYLOAD, Map.of(HandlerDefinition.IDEMPOTENCY_KEY_HEADER, ids.next()));
                    HandlerResult<Object> result = executor.execute(handler, message, () -> null);
                    expect(result.outcome() == MessageOutcome.PROCESSED, () -> "executor on a new id: " + result);
                    return 1;
                };
            }
        };
    }

    /** d) Batch claim of {@code size} ids in lease mode: claimAll, then completeAll. */
    static BenchmarkCase sumiBatchLease(int size) {
        return new LedgerTableCase(
                "sumi-batch-" + size, "Sumi batch claimAll + completeAll, " + size + " ids/call", Role.SUMI) {
            // close() throws Exception: an operation closes whatever it opened (pools, threads); the
            // harness lets any failure, interruption included, end the run.
            @SuppressWarnings("try")
            @Override
            Operation open(DataSource dataSource, Ids ids) {
                ProcessedMessageStore store = store(dataSource);
                return new Operation() {
                    long claimNanos;
                    long completeNanos;

                    @Override
                    public int run() {
                        List<String> batch = ids.next(size);
                        List<ClaimRequest> requests = new ArrayList<>(size);
                        for (String id : batch) {
                            requests.add(new ClaimRequest(id, null));
                        }
                        long t0 = System.nanoTime();
                        List<ClaimResult> results = store.claimAll(CONSUMER, requests, LEASE);
                        long t1 = System.nanoTime();
                        for (ClaimResult result : results) {
                            expect(
                                    result.outcome() == ClaimOutcome.CLAIMED,
                                    () -> "batch claim of a new id: " + result);
                        }
                        int completed = store.completeAll(
                                CONSUMER, results.get(0).message().claimToken(), batch);
                        long t2 = System.nanoTime();
                        expect(completed == size, () -> "completeAll completed " + completed + " of " + size);
                        claimNanos += t1 - t0;
                        completeNanos += t2 - t1;
                        return size;
                    }

                    @Override
                    public String details(long ops) {
                        // Covers warm-up and measured calls alike.
                        return String.format(
                                "%s: claimAll %.2f ms, completeAll %.2f ms per call of %d ids",
                                id, claimNanos / 1e6 / ops, completeNanos / 1e6 / ops, size);
                    }
                };
            }
        };
    }

    /** Batch claim in transactional mode: claimAllCompleted of {@code size} ids in one transaction (what a batch listener does). */
    static BenchmarkCase sumiBatchTransactional(int size) {
        return new LedgerTableCase(
                "sumi-batch-tx-" + size, "Sumi batch claimAllCompleted in a tx, " + size + " ids/call", Role.SUMI) {
            @Override
            Operation open(DataSource dataSource, Ids ids) {
                ProcessedMessageStore store = store(dataSource);
                TransactionTemplate tx = new TransactionTemplate(new DataSourceTransactionManager(dataSource));
                return () -> {
                    List<ClaimRequest> requests = new ArrayList<>(size);
                    for (String id : ids.next(size)) {
                        requests.add(new ClaimRequest(id, null));
                    }
                    List<ClaimResult> results = tx.execute(status -> store.claimAllCompleted(CONSUMER, requests));
                    expect(results != null && results.size() == size, () -> "claimAllCompleted returned " + results);
                    for (ClaimResult result : results) {
                        expect(result.outcome() == ClaimOutcome.CLAIMED, () -> "batch claim of a new id: " + result);
                    }
                    return size;
                };
            }
        };
    }

    // ------------------------------------------------------------------ peers

    /** e) Apache Camel's JDBC idempotent repository (SELECT COUNT(*), then INSERT, in one transaction per id). */
    static BenchmarkCase camel() {
        return new BenchmarkCase("camel", "Camel JdbcMessageIdRepository.add", Role.CAMEL) {
            String table() {
                return schema() + ".camel_messageprocessed";
            }

            @Override
            void createTables(Connection connection) throws SQLException {
                // Camel's own DDL (JdbcMessageIdRepository.DEFAULT_CREATE_STRING); start() would create the same.
                try (Statement s = connection.createStatement()) {
                    s.execute("CREATE TABLE " + table() + " (processorName VARCHAR(255), messageId VARCHAR(100), "
                            + "createdAt TIMESTAMP, PRIMARY KEY (processorName, messageId))");
                }
            }

            @Override
            List<String> tables() {
                return List.of(table());
            }

            @Override
            String countQuery() {
                return "SELECT count(*) FROM " + table();
            }

            @Override
            Operation open(DataSource dataSource, Ids ids) {
                JdbcMessageIdRepository repository = new JdbcMessageIdRepository(dataSource, CONSUMER);
                repository.setTableName(table());
                repository.start(); // init() then doStart(): checks the table; no CamelContext needed
                return new Operation() {
                    @Override
                    public int run() {
                        expect(repository.add(ids.next()), "Camel add of a new id returned false");
                        return 1;
                    }

                    @Override
                    public void close() {
                        repository.stop();
                    }
                };
            }
        };
    }

    /** f) Spring Integration's JDBC metadata store (one INSERT ... SELECT ... HAVING COUNT(*)=0 ON CONFLICT DO NOTHING). */
    static BenchmarkCase springIntegration() {
        return springIntegration(false);
    }

    /**
     * Spring Integration's JdbcMetadataStore. Used as a plain object, as without a Spring context,
     * its {@code @Transactional} is not applied: putIfAbsent runs its one statement in autocommit
     * (the peer's fastest way, and the figure the targets compare with). With
     * {@code inTransaction}, each call runs in a transaction of its own, as it does when the store
     * is a bean of a context with transaction management on (Boot's default).
     */
    static BenchmarkCase springIntegration(boolean inTransaction) {
        String id = inTransaction ? "spring-integration-tx" : "spring-integration";
        String label = inTransaction
                ? "Spring Integration putIfAbsent in a tx (its @Transactional applied)"
                : "Spring Integration JdbcMetadataStore.putIfAbsent";
        return new BenchmarkCase(id, label, inTransaction ? Role.REFERENCE : Role.SPRING_INTEGRATION) {
            String prefix() {
                return schema() + ".INT_";
            }

            @Override
            void createTables(Connection connection) throws SQLException {
                // From org/springframework/integration/jdbc/schema-postgresql.sql.
                try (Statement s = connection.createStatement()) {
                    s.execute("CREATE TABLE " + prefix() + "METADATA_STORE (METADATA_KEY VARCHAR(255) NOT NULL,"
                            + " METADATA_VALUE VARCHAR(4000), REGION VARCHAR(100) NOT NULL,"
                            + " constraint INT_METADATA_STORE_PK primary key (METADATA_KEY, REGION))");
                }
            }

            @Override
            List<String> tables() {
                return List.of(prefix() + "METADATA_STORE");
            }

            @Override
            String countQuery() {
                return "SELECT count(*) FROM " + prefix() + "METADATA_STORE";
            }

            @Override
            Operation open(DataSource dataSource, Ids ids) {
                JdbcMetadataStore store = new JdbcMetadataStore(dataSource);
                store.setTablePrefix(prefix());
                store.setRegion(CONSUMER);
                store.afterPropertiesSet();
                store.start();
                TransactionTemplate tx =
                        inTransaction ? new TransactionTemplate(new DataSourceTransactionManager(dataSource)) : null;
                return new Operation() {
                    @Override
                    public int run() {
                        String key = ids.next();
                        String value = Long.toString(System.currentTimeMillis());
                        String previous = tx == null
                                ? store.putIfAbsent(key, value)
                                : tx.execute(status -> store.putIfAbsent(key, value));
                        expect(previous == null, "putIfAbsent of a new key found a value");
                        return 1;
                    }

                    @Override
                    public void close() {
                        store.stop();
                    }
                };
            }
        };
    }
}
