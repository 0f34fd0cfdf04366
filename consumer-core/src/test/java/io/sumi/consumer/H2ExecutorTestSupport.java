package io.sumi.consumer;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sumi.store.MessageStatus;
import io.sumi.store.ProcessedMessage;
import io.sumi.store.jdbc.JdbcProcessedMessageStore;
import io.sumi.testing.CountingStore;
import io.sumi.testing.LedgerTime;
import io.sumi.testing.MutableClock;
import io.sumi.testing.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The executor's unit tests run on the real JDBC ledger in H2 (fast, in memory). The ledger takes
 * its times from the database's clock, so tests move time by ageing their rows ({@link #advance}). Each test gets a ledger namespace of its own and removes its rows afterwards;
 * the handlers' own "business rows" go to the {@value #EFFECTS} table, keyed by namespace too.
 */
abstract class H2ExecutorTestSupport {

    static final Duration LEASE = Duration.ofMinutes(5);

    static final String EFFECTS = "consumer_test_effects";

    /** A clock for what is not the ledger's (budgets); the ledger's times are the database's, see {@link #advance}. */
    final MutableClock clock = MutableClock.at("2026-03-01T10:00:00Z");

    final SimpleMeterRegistry meters = new SimpleMeterRegistry();

    DataSource dataSource;
    JdbcTemplate jdbc;
    JdbcProcessedMessageStore store;
    CountingStore counting;
    DataSourceTransactionManager transactionManager;
    TransactionTemplate outerTransaction;
    IdempotentExecutor executor;
    String consumer;

    @BeforeEach
    void setUpLedger() {
        dataSource = TestDatabase.H2.dataSource();
        jdbc = new JdbcTemplate(dataSource);
        jdbc.execute("CREATE TABLE IF NOT EXISTS " + EFFECTS
                + " (consumer VARCHAR(200) NOT NULL, message_id VARCHAR(200) NOT NULL, note VARCHAR(200))");
        store = JdbcProcessedMessageStore.builder(dataSource).build();
        counting = new CountingStore(store);
        transactionManager = new DataSourceTransactionManager(dataSource);
        outerTransaction = new TransactionTemplate(transactionManager);
        consumer = getClass().getSimpleName() + "-" + UUID.randomUUID();
        executor = IdempotentExecutor.builder(counting)
                .transactionSupport(TransactionSupport.of(transactionManager))
                .meterRegistry(meters)
                .build();
    }

    @AfterEach
    void cleanUpLedger() {
        jdbc.update("DELETE FROM processed_messages WHERE consumer = ?", consumer);
        jdbc.update("DELETE FROM " + EFFECTS + " WHERE consumer = ?", consumer);
        meters.close();
    }

    HandlerDefinition.Builder definition(IdempotencyMode mode) {
        return HandlerDefinition.builder(consumer).mode(mode).lease(LEASE);
    }

    HandlerDefinition lease() {
        return definition(IdempotencyMode.LEASE).build();
    }

    HandlerDefinition transactional() {
        return definition(IdempotencyMode.TRANSACTIONAL).build();
    }

    HandlerDefinition auto() {
        return definition(IdempotencyMode.AUTO).build();
    }

    /** A message whose key is in the {@code idempotency-key} header. */
    static InboundMessage message(String key, @Nullable Object payload) {
        return InboundMessage.of(payload, Map.of(HandlerDefinition.IDEMPOTENCY_KEY_HEADER, key));
    }

    static InboundMessage message(String key) {
        return message(key, "payload of " + key);
    }

    /** A message with the given headers (values may be null or byte arrays). */
    static InboundMessage withHeaders(@Nullable Object payload, Object... namesAndValues) {
        Map<String, @Nullable Object> headers = new HashMap<>();
        for (int i = 0; i < namesAndValues.length; i += 2) {
            headers.put((String) namesAndValues[i], namesAndValues[i + 1]);
        }
        return InboundMessage.of(payload, headers);
    }

    /**
     * As if {@code duration} had passed: every ledger row of this test's namespace is aged by it
     * (its times are the database's, which a test cannot move).
     */
    void advance(Duration duration) {
        LedgerTime.age(dataSource, consumer, duration);
    }

    /**
     * Another consumer receives {@code key} while the caller's handler runs: the delivery runs on a
     * thread of its own; returns what it threw, {@code null} if it returned.
     */
    @Nullable
    Exception deliverElsewhere(HandlerDefinition definition, String key, IdempotentExecutor.HandlerBody<?> body)
            throws Exception {
        return CompletableFuture.supplyAsync(() -> {
                    try {
                        executor.execute(definition, message(key), body);
                        return null;
                    } catch (Exception ex) {
                        return ex;
                    }
                })
                .get(10, TimeUnit.SECONDS);
    }

    /** The ledger database's clock. */
    Instant ledgerNow() {
        OffsetDateTime now = jdbc.queryForObject("SELECT CURRENT_TIMESTAMP", OffsetDateTime.class);
        return Objects.requireNonNull(now).toInstant();
    }

    /** Asserts that a claim was released: its lease ended at the database's "now" of the release, not later. */
    void assertReleasedAtOnce(ProcessedMessage row) {
        Instant now = ledgerNow();
        assertThat(row.leaseUntil())
                .as("the lease ends at once")
                .isNotNull()
                .isBeforeOrEqualTo(now)
                .isAfter(now.minus(Duration.ofMinutes(1)));
    }

    Optional<ProcessedMessage> row(String key) {
        return store.find(consumer, key);
    }

    MessageStatus status(String key) {
        return row(key).orElseThrow(() -> new AssertionError("no ledger row for " + key))
                .status();
    }

    int ledgerRows() {
        return count("SELECT COUNT(*) FROM processed_messages WHERE consumer = ?");
    }

    int completedRows() {
        return count("SELECT COUNT(*) FROM processed_messages WHERE consumer = ? AND status = 'COMPLETED'");
    }

    /** Writes a business row in the current transaction, if any (the handler's "effect"). */
    void recordEffect(String key) {
        jdbc.update("INSERT INTO " + EFFECTS + " (consumer, message_id) VALUES (?, ?)", consumer, key);
    }

    int effectRows() {
        return count("SELECT COUNT(*) FROM " + EFFECTS + " WHERE consumer = ?");
    }

    List<String> effectKeys() {
        return jdbc.queryForList(
                "SELECT message_id FROM " + EFFECTS + " WHERE consumer = ? ORDER BY message_id",
                String.class,
                consumer);
    }

    private int count(String sql) {
        Integer count = jdbc.queryForObject(sql, Integer.class, consumer);
        return count == null ? 0 : count;
    }

    /**
     * Counts this namespace's ledger rows on a connection of its own, outside any transaction of
     * the calling thread: what another consumer would see right now.
     */
    int ledgerRowsSeenByAnotherConnection() throws SQLException {
        try (Connection connection = dataSource.getConnection();
                PreparedStatement statement =
                        connection.prepareStatement("SELECT COUNT(*) FROM processed_messages WHERE consumer = ?")) {
            statement.setString(1, consumer);
            try (ResultSet rs = statement.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }

    /** {@code sumi.messages} of this namespace with the given outcome tag (0 when never counted). */
    double messages(String outcome) {
        Counter counter = meters.find("sumi.messages")
                .tag("consumer", consumer)
                .tag("outcome", outcome)
                .counter();
        return counter == null ? 0 : counter.count();
    }

    /**
     * Every {@code sumi.messages} count of this namespace that is not 0, by outcome tag (every outcome's
     * counter exists, at 0, from the namespace's first message on).
     */
    Map<String, Double> outcomes() {
        Map<String, Double> counts = new TreeMap<>();
        meters.find("sumi.messages").tag("consumer", consumer).counters().stream()
                .filter(counter -> counter.count() > 0)
                .forEach(counter -> counts.put(counter.getId().getTag("outcome"), counter.count()));
        return counts;
    }

    double counter(String name) {
        Counter counter = meters.find(name).tag("consumer", consumer).counter();
        return counter == null ? 0 : counter.count();
    }
}
