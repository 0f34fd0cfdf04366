package io.sumi.outbox;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sumi.testing.MutableClock;
import io.sumi.testing.TestDatabase;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * What the dispatcher's tests share: a migrated outbox on {@link #database()} emptied before each
 * test, a clock the tests move, a recording publisher, and the helpers. The tests of every
 * database are {@link OutboxDispatcherContractTests}; a database's own are a class of that
 * database (PostgreSQL's {@code dispatchAmong}, MariaDB's legacy columns).
 */
abstract class OutboxDispatcherFixture {

    abstract TestDatabase database();

    DataSource dataSource;
    JdbcTemplate jdbc;
    MutableClock clock;
    OutboxTable table;
    Outbox outbox;
    TransactionTemplate tx;
    SimpleMeterRegistry meters;
    RecordingPublisher publisher;

    @BeforeEach
    void setUp() {
        dataSource = OutboxTestDatabases.dataSource(database());
        jdbc = new JdbcTemplate(dataSource);
        jdbc.update("DELETE FROM outbox");
        clock = MutableClock.at("2030-01-01T00:00:00Z");
        table = OutboxTable.builder(dataSource).clock(clock).build();
        outbox = Outbox.builder(table).build();
        tx = new TransactionTemplate(new DataSourceTransactionManager(dataSource));
        meters = new SimpleMeterRegistry();
        publisher = newPublisher();
    }

    /** The publisher the tests send through: a recording one; subclasses may pass it through a real broker. */
    RecordingPublisher newPublisher() {
        return new RecordingPublisher();
    }

    OutboxDispatcher.Builder dispatcher(OutboxPublisher publisher) {
        return OutboxDispatcher.builder(table, publisher).jitter(() -> 0).meterRegistry(meters);
    }

    long append(String aggregateId, String topic, String payload) {
        return tx.execute(status -> outbox.append(aggregateId, topic, payload));
    }

    long append(OutboxMessage message) {
        return tx.execute(status -> outbox.append(message));
    }

    OutboxRecord row(long id) {
        return table.find(id).orElseThrow();
    }

    double counter(String name, String... tags) {
        Counter counter = meters.find(name).tags(tags).counter();
        return counter == null ? 0 : counter.count();
    }

    /**
     * Issue 19 A9. A batch with two rows the broker acknowledges and one it fails with
     * {@code message}: the acknowledged rows are marked dispatched in the first round and never sent
     * again, the failing row counts an attempt per round and is parked at the limit, and no round's
     * marks fail. Rounds run as the loop runs them: a failed round is logged and the next one
     * follows once the leases have ended.
     */
    void assertUnstorableErrorFailsOnlyItsRow(OutboxTable onTable, String tableName, String message) {
        assertUnstorableErrorFailsOnlyItsRow(onTable, tableName, message, true);
    }

    /** As above; {@code textKept}: whether some text of the failure is stored (else {@code last_error} is empty). */
    void assertUnstorableErrorFailsOnlyItsRow(OutboxTable onTable, String tableName, String message, boolean textKept) {
        Outbox onOutbox = Outbox.builder(onTable).build();
        long ok1 = tx.execute(status -> onOutbox.append("a", "t", "1"));
        long bad = tx.execute(status -> onOutbox.append("b", "t", "2"));
        long ok2 = tx.execute(status -> onOutbox.append("c", "t", "3"));
        publisher.failWith(record -> record.id() == bad ? new IllegalStateException(message) : null);
        OutboxDispatcher dispatcher = OutboxDispatcher.builder(onTable, publisher)
                .jitter(() -> 0)
                .meterRegistry(meters)
                .maxAttempts(2)
                .build();

        List<RuntimeException> failedRounds = new ArrayList<>();
        for (int round = 0; round < 4; round++) {
            try {
                dispatcher.dispatchOnce();
            } catch (RuntimeException ex) {
                failedRounds.add(ex);
            }
            org.springframework.jdbc.core.PreparedStatementSetter past =
                    statement -> onTable.dialect().setInstant(statement, 1, Instant.parse("2000-01-01T00:00:00Z"));
            jdbc.update("UPDATE " + tableName + " SET lease_until = ? WHERE lease_until IS NOT NULL", past);
            clock.advance(Duration.ofMinutes(15));
        }

        assertThat(publisher.sentIds())
                .as("the acknowledged rows, each sent exactly once")
                .containsExactly(ok1, ok2);
        assertThat(failedRounds).as("rounds whose marks failed").isEmpty();
        assertThat(publisher.attempted.stream().filter(r -> r.id() == bad).count())
                .as("sends of the failing row")
                .isEqualTo(2);
        OutboxRecord failed = onTable.find(bad).orElseThrow();
        assertThat(failed.attempts()).isEqualTo(2);
        assertThat(failed.parked()).isTrue();
        if (textKept) {
            String stored = failed.lastError();
            assertThat(stored).startsWith("java.lang.IllegalStateException: ");
            assertThat(stored).doesNotContain("\u0000");
            assertThat(stored.codePointCount(0, stored.length())).isLessThanOrEqualTo(1000);
        } else {
            assertThat(failed.lastError()).isNull();
        }
        assertThat(onTable.find(ok1).orElseThrow().outcome()).isEqualTo(DispatchOutcome.SENT);
        assertThat(onTable.find(ok2).orElseThrow().outcome()).isEqualTo(DispatchOutcome.SENT);
    }
}
