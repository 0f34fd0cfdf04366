package io.sumi.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sumi.consumer.exception.BatchFailedException;
import io.sumi.store.MessageStatus;
import io.sumi.store.ProcessedMessage;
import io.sumi.store.jdbc.JdbcProcessedMessageStore;
import io.sumi.testing.ForeignTransactionManager;
import io.sumi.testing.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.EnumSource;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.TransactionAwareDataSourceProxy;
import org.springframework.transaction.IllegalTransactionStateException;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * Transactional mode only when the ledger's DataSource takes part in the transaction (issue 8,
 * defects 3 and 6). A transaction of another resource (another DataSource, a Kafka-only manager,
 * a custom one) binds no ledger connection: a ledger row inserted there would commit on its own.
 * Real transaction managers on a real database; run on each database: the class is parameterized by it.
 */
@ParameterizedClass
@EnumSource(TestDatabase.class)
class TransactionParticipationIntegrationTests {

    static final String EFFECTS = "participation_test_effects";

    /** The database, the class's parameter: each test runs on every database the source above names. */
    @Parameter
    TestDatabase database;

    DataSource dataSource;
    JdbcTemplate jdbc;
    JdbcProcessedMessageStore store;
    DataSourceTransactionManager ledgerTransactions;
    PlatformTransactionManager foreignTransactions = new ForeignTransactionManager();
    String consumer;
    final SimpleMeterRegistry meters = new SimpleMeterRegistry();

    @BeforeEach
    void setUp() {
        dataSource = database.dataSource();
        jdbc = new JdbcTemplate(dataSource);
        jdbc.execute("CREATE TABLE IF NOT EXISTS " + EFFECTS
                + " (consumer VARCHAR(200) NOT NULL, message_id VARCHAR(200) NOT NULL)");
        store = JdbcProcessedMessageStore.builder(dataSource).build();
        ledgerTransactions = new DataSourceTransactionManager(dataSource);
        consumer = getClass().getSimpleName() + "-" + UUID.randomUUID();
    }

    @AfterEach
    void cleanUp() {
        jdbc.update("DELETE FROM processed_messages WHERE consumer = ?", consumer);
        jdbc.update("DELETE FROM " + EFFECTS + " WHERE consumer = ?", consumer);
    }

    IdempotentExecutor executor(PlatformTransactionManager manager) {
        return IdempotentExecutor.builder(store)
                .transactionSupport(TransactionSupport.of(manager, dataSource))
                .meterRegistry(meters)
                .build();
    }

    HandlerDefinition definition(IdempotencyMode mode) {
        return HandlerDefinition.builder(consumer)
                .mode(mode)
                .lease(Duration.ofMinutes(5))
                .build();
    }

    static InboundMessage message(String key) {
        return InboundMessage.of("payload of " + key, Map.of(HandlerDefinition.IDEMPOTENCY_KEY_HEADER, key));
    }

    void recordEffect(String key) {
        jdbc.update("INSERT INTO " + EFFECTS + " (consumer, message_id) VALUES (?, ?)", consumer, key);
    }

    /** What another consumer sees now: committed rows only. */
    int committed(String table) throws SQLException {
        try (Connection connection = dataSource.getConnection();
                PreparedStatement statement =
                        connection.prepareStatement("SELECT COUNT(*) FROM " + table + " WHERE consumer = ?")) {
            statement.setString(1, consumer);
            try (ResultSet rs = statement.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }

    Optional<ProcessedMessage> row(String key) {
        return store.find(consumer, key);
    }

    <T> T inForeignTransaction(TransactionTemplateBody<T> body) throws Exception {
        AtomicReference<Exception> failure = new AtomicReference<>();
        T result = new TransactionTemplate(foreignTransactions).execute(status -> {
            try {
                return body.run();
            } catch (Exception ex) {
                failure.set(ex);
                status.setRollbackOnly();
                return null;
            }
        });
        if (failure.get() != null) {
            throw failure.get();
        }
        return result;
    }

    interface TransactionTemplateBody<T> {
        T run() throws Exception;
    }

    @Test
    void explicitTransactionalModeInAForeignTransactionIsRefusedAndCommitsNothing() throws Exception {
        IdempotentExecutor executor = executor(foreignTransactions);
        AtomicInteger runs = new AtomicInteger();

        assertThatThrownBy(() -> inForeignTransaction(
                        () -> executor.execute(definition(IdempotencyMode.TRANSACTIONAL), message("k"), () -> {
                            runs.incrementAndGet();
                            recordEffect("k");
                            throw new IllegalStateException("handler failed");
                        })))
                .isInstanceOf(IllegalTransactionStateException.class)
                .hasMessageContaining("ledger's DataSource does not take part");

        assertThat(runs).hasValue(0);
        assertThat(committed("processed_messages")).isZero();
        assertThat(committed(EFFECTS)).isZero();
    }

    @Test
    void explicitTransactionalModeWhoseManagerOpensAForeignTransactionIsRefused() throws Exception {
        IdempotentExecutor executor = executor(foreignTransactions);

        assertThatThrownBy(() -> executor.execute(definition(IdempotencyMode.TRANSACTIONAL), message("k"), () -> "ran"))
                .isInstanceOf(IllegalTransactionStateException.class)
                .hasMessageContaining("ledger's DataSource does not take part");
        assertThat(committed("processed_messages")).isZero();
    }

    @Test
    void autoModeInAForeignTransactionTakesALeaseSoAFailedHandlerRunsAgainOnRedelivery() throws Exception {
        IdempotentExecutor executor = executor(foreignTransactions);
        AtomicInteger runs = new AtomicInteger();
        List<IdempotencyMode> modes = new ArrayList<>();
        IdempotentExecutor.HandlerBody<String> failing = () -> {
            runs.incrementAndGet();
            modes.add(IdempotencyContext.current().mode());
            throw new IllegalStateException("provider down");
        };

        assertThatThrownBy(() -> inForeignTransaction(
                        () -> executor.execute(definition(IdempotencyMode.AUTO), message("k"), failing)))
                .hasMessage("provider down");
        assertThat(row("k").map(ProcessedMessage::status))
                .as("the claim was released, not committed COMPLETED")
                .isNotEqualTo(Optional.of(MessageStatus.COMPLETED));

        HandlerResult<String> redelivery =
                inForeignTransaction(() -> executor.execute(definition(IdempotencyMode.AUTO), message("k"), () -> {
                    runs.incrementAndGet();
                    modes.add(IdempotencyContext.current().mode());
                    return "done";
                }));

        assertThat(redelivery.outcome()).isEqualTo(MessageOutcome.PROCESSED);
        assertThat(runs).hasValue(2);
        assertThat(modes).containsOnly(IdempotencyMode.LEASE);
        assertThat(row("k").orElseThrow().status()).isEqualTo(MessageStatus.COMPLETED);
    }

    @Test
    void autoModeInALedgerTransactionIsTransactionalAndARollbackLeavesNeitherRow() throws Exception {
        IdempotentExecutor executor = executor(ledgerTransactions);
        List<IdempotencyMode> modes = new ArrayList<>();

        assertThatThrownBy(() -> new TransactionTemplate(ledgerTransactions).execute(status -> {
                    try {
                        return executor.execute(definition(IdempotencyMode.AUTO), message("k"), () -> {
                            modes.add(IdempotencyContext.current().mode());
                            recordEffect("k");
                            throw new IllegalStateException("business rule violated");
                        });
                    } catch (RuntimeException ex) {
                        throw ex;
                    } catch (Exception ex) {
                        throw new IllegalStateException(ex);
                    }
                }))
                .hasMessage("business rule violated");

        assertThat(modes).containsExactly(IdempotencyMode.TRANSACTIONAL);
        assertThat(committed("processed_messages")).isZero();
        assertThat(committed(EFFECTS)).isZero();
    }

    @Test
    void aLedgerBehindATransactionAwareProxyTakesPartInTheTransactionOfItsTarget() throws Exception {
        JdbcProcessedMessageStore proxied = JdbcProcessedMessageStore.builder(
                        new TransactionAwareDataSourceProxy(dataSource))
                .build();
        IdempotentExecutor executor = IdempotentExecutor.builder(proxied)
                .transactionSupport(
                        TransactionSupport.of(ledgerTransactions, new TransactionAwareDataSourceProxy(dataSource)))
                .build();
        List<IdempotencyMode> modes = new ArrayList<>();

        new TransactionTemplate(ledgerTransactions).executeWithoutResult(status -> {
            try {
                executor.execute(definition(IdempotencyMode.AUTO), message("k"), () -> {
                    modes.add(IdempotencyContext.current().mode());
                    return null;
                });
            } catch (Exception ex) {
                throw new IllegalStateException(ex);
            }
            status.setRollbackOnly();
        });

        assertThat(modes).containsExactly(IdempotencyMode.TRANSACTIONAL);
        assertThat(committed("processed_messages"))
                .as("rolled back with the transaction")
                .isZero();
    }

    @Test
    void aTransactionalBatchInAForeignTransactionStopsAtTheFailingRecordAndCommitsTheOnesBefore() throws Exception {
        IdempotentExecutor executor = executor(ledgerTransactions);
        List<InboundMessage> batch = List.of(message("a"), message("b"), message("c"), message("d"));
        IllegalArgumentException poison = new IllegalArgumentException("c is malformed");

        assertThatThrownBy(() -> inForeignTransaction(() ->
                        executor.executeBatch(definition(IdempotencyMode.TRANSACTIONAL), batch, indexes -> {
                            for (int index : indexes) {
                                if (index == 2) {
                                    throw new BatchFailedException(2, poison);
                                }
                                recordEffect(
                                        (String) batch.get(index).header(HandlerDefinition.IDEMPOTENCY_KEY_HEADER));
                            }
                        })))
                .isInstanceOfSatisfying(BatchFailedException.class, ex -> {
                    assertThat(ex.index())
                            .as("only the failing record may go to the DLT")
                            .isEqualTo(2);
                    assertThat(ex.getCause()).isSameAs(poison);
                });

        assertThat(row("a").orElseThrow().status()).isEqualTo(MessageStatus.COMPLETED);
        assertThat(row("b").orElseThrow().status()).isEqualTo(MessageStatus.COMPLETED);
        assertThat(row("c")).isEmpty();
        assertThat(row("d")).isEmpty();
        assertThat(committed(EFFECTS)).isEqualTo(2);
    }
}
