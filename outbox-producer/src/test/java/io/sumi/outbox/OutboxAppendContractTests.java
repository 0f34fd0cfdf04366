package io.sumi.outbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sumi.testing.MutableClock;
import io.sumi.testing.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.EnumSource;
import org.slf4j.MDC;
import org.springframework.dao.DataAccessException;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.DriverManagerDataSource;
import org.springframework.transaction.IllegalTransactionStateException;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * {@link Outbox#append}: the row commits with the caller's transaction or not at all. Run on
 * every database: the class is parameterized by it.
 */
@ParameterizedClass
@EnumSource(TestDatabase.class)
class OutboxAppendContractTests {

    /** The database, the class's parameter: each test runs on every database the source above names. */
    @Parameter
    TestDatabase database;

    DataSource dataSource;
    JdbcTemplate jdbc;
    MutableClock clock;
    OutboxTable table;
    TransactionTemplate tx;
    AtomicInteger wakeUps = new AtomicInteger();
    Outbox outbox;

    @BeforeEach
    void setUp() {
        dataSource = OutboxTestDatabases.dataSource(database);
        jdbc = new JdbcTemplate(dataSource);
        jdbc.update("DELETE FROM outbox");
        jdbc.execute(
                "CREATE TABLE IF NOT EXISTS outbox_test_orders (id VARCHAR(64) PRIMARY KEY, total INTEGER NOT NULL)");
        jdbc.update("DELETE FROM outbox_test_orders");
        clock = MutableClock.at("2030-01-01T00:00:00Z");
        table = OutboxTable.builder(dataSource).clock(clock).build();
        outbox = Outbox.builder(table).afterCommit(wakeUps::incrementAndGet).build();
        tx = new TransactionTemplate(new DataSourceTransactionManager(dataSource));
    }

    @AfterEach
    void clearMdc() {
        MDC.clear();
    }

    int rowsSeenByAnotherConnection() {
        try (java.sql.Connection connection = dataSource.getConnection();
                java.sql.ResultSet rs = connection.createStatement().executeQuery("SELECT COUNT(*) FROM outbox")) {
            rs.next();
            return rs.getInt(1);
        } catch (java.sql.SQLException ex) {
            throw new IllegalStateException(ex);
        }
    }

    int outboxRows() {
        return jdbc.queryForObject("SELECT COUNT(*) FROM outbox", Integer.class);
    }

    @Test
    void appendWritesTheRowInTheCallersTransactionAndItCommitsWithIt() {
        long id = tx.execute(status -> {
            jdbc.update("INSERT INTO outbox_test_orders (id, total) VALUES ('o-1', 42)");
            long appended = outbox.append(OutboxMessage.builder("o-1", "mail.send", "{\"to\":\"a@example.com\"}")
                    .schemaVersion("2")
                    .tenant("acme")
                    .delay(Duration.ofMinutes(3))
                    .build());
            // Visible inside the transaction, to its own connection...
            assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM outbox WHERE id = ?", Integer.class, appended))
                    .isEqualTo(1);
            // ...and not to other connections (a dispatcher's) before the commit.
            assertThat(rowsSeenByAnotherConnection()).isZero();
            return appended;
        });
        assertThat(wakeUps).hasValue(1);
        OutboxRecord row = table.find(id).orElseThrow();
        assertThat(row.aggregateId()).isEqualTo("o-1");
        assertThat(row.topic()).isEqualTo("mail.send");
        assertThat(row.payload()).isEqualTo("{\"to\":\"a@example.com\"}");
        assertThat(row.headers())
                .containsExactly(
                        Map.entry(OutboxHeaders.SCHEMA_VERSION, "2"), Map.entry(OutboxHeaders.TENANT_ID, "acme"));
        assertThat(row.createdAt()).isEqualTo(clock.instant());
        assertThat(row.availableAt()).isEqualTo(clock.instant().plus(Duration.ofMinutes(3)));
        assertThat(row.attempts()).isZero();
        assertThat(row.pending()).isTrue();
        assertThat(row.parked()).isFalse();
        assertThat(row.brokerHeaders()).containsEntry(OutboxHeaders.OUTBOX_ID, Long.toString(id));
    }

    @Test
    void aBusinessWriteFailingAfterTheAppendLeavesNoOutboxRow() {
        jdbc.update("INSERT INTO outbox_test_orders (id, total) VALUES ('taken', 1)");
        assertThatThrownBy(() -> tx.executeWithoutResult(status -> {
                    jdbc.update("INSERT INTO outbox_test_orders (id, total) VALUES ('o-2', 10)");
                    outbox.append("o-2", "mail.send", "{}");
                    outbox.append("o-2", "stripe.charge", "{\"amount\":10}");
                    // The second business write fails: a duplicate key, inside the same transaction.
                    jdbc.update("INSERT INTO outbox_test_orders (id, total) VALUES ('taken', 2)");
                }))
                .isInstanceOf(DataAccessException.class);
        assertThat(outboxRows()).isZero();
        assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM outbox_test_orders WHERE id = 'o-2'", Integer.class))
                .isZero();
        assertThat(wakeUps).hasValue(0);
    }

    @Test
    void anExceptionThrownByTheServiceAfterTheAppendLeavesNoOutboxRow() {
        assertThatThrownBy(() -> tx.executeWithoutResult(status -> {
                    outbox.append("o-3", "mail.send", "{}");
                    throw new IllegalStateException("payment declined");
                }))
                .hasMessage("payment declined");
        assertThat(outboxRows()).isZero();
    }

    @Test
    void appendOutsideATransactionFailsClearlyAndWritesNothing() {
        assertThatThrownBy(() -> outbox.append("o-4", "mail.send", "{}"))
                .isInstanceOf(IllegalTransactionStateException.class)
                .hasMessageContaining("needs an active Spring-managed transaction")
                .hasMessageContaining("@Transactional")
                .hasMessageContaining("Nothing was written");
        assertThatThrownBy(() -> outbox.appendAll(List.of(OutboxMessage.of("o-4", "mail.send", "{}"))))
                .isInstanceOf(IllegalTransactionStateException.class);
        assertThat(outboxRows()).isZero();
    }

    @Test
    void appendInAReadOnlyTransactionFails() {
        TransactionTemplate readOnly = new TransactionTemplate(new DataSourceTransactionManager(dataSource));
        readOnly.setReadOnly(true);
        assertThatThrownBy(() -> readOnly.executeWithoutResult(status -> outbox.append("o-5", "mail.send", "{}")))
                .isInstanceOf(IllegalTransactionStateException.class)
                .hasMessageContaining("read-only");
        assertThat(outboxRows()).isZero();
    }

    @Test
    void appendInATransactionOnAnotherDataSourceFailsInsteadOfCommittingAlone() {
        DriverManagerDataSource other =
                new DriverManagerDataSource("jdbc:h2:mem:sumi_outbox_other;DB_CLOSE_DELAY=-1", "sa", "");
        TransactionTemplate otherTx = new TransactionTemplate(new DataSourceTransactionManager(other));
        assertThatThrownBy(() -> otherTx.executeWithoutResult(status -> outbox.append("o-6", "mail.send", "{}")))
                .isInstanceOf(IllegalTransactionStateException.class)
                .hasMessageContaining("not on the outbox's DataSource");
        assertThat(outboxRows()).isZero();
    }

    @Test
    void theTraceIdComesFromTheMdcUnlessTheMessageHasOne() {
        MDC.put("traceId", "4bf92f3577b34da6a3ce929d0e0e4736");
        long fromMdc = tx.execute(status -> outbox.append("o-7", "mail.send", "{}"));
        long explicit = tx.execute(status -> outbox.append(
                OutboxMessage.builder("o-7", "mail.send", "{}").traceId("mine").build()));
        MDC.clear();
        long none = tx.execute(status -> outbox.append("o-7", "mail.send", "{}"));
        assertThat(table.find(fromMdc).orElseThrow().headers())
                .containsEntry(OutboxHeaders.TRACE_ID, "4bf92f3577b34da6a3ce929d0e0e4736");
        assertThat(table.find(explicit).orElseThrow().headers()).containsEntry(OutboxHeaders.TRACE_ID, "mine");
        assertThat(table.find(none).orElseThrow().headers()).doesNotContainKey(OutboxHeaders.TRACE_ID);
    }

    @Test
    void appendAllWritesABatchInOrderAndWakesTheDispatcherOncePerCommit() {
        List<Long> ids = tx.execute(status -> outbox.appendAll(List.of(
                OutboxMessage.of("a", "t", "1"), OutboxMessage.of("a", "t", "2"), OutboxMessage.of("b", "t", "3"))));
        assertThat(ids).hasSize(3).isSorted().doesNotHaveDuplicates();
        assertThat(ids.stream().map(id -> table.find(id).orElseThrow().payload()))
                .containsExactly("1", "2", "3");
        tx.executeWithoutResult(status -> {
            outbox.append("c", "t", "4");
            outbox.append("c", "t", "5");
        });
        assertThat(wakeUps).hasValue(2);
        List<Long> none = tx.execute(status -> outbox.appendAll(List.of()));
        assertThat(none).isEmpty();
    }
}
