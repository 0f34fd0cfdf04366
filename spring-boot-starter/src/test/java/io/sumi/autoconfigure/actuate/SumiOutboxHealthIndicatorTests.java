package io.sumi.autoconfigure.actuate;

import static org.assertj.core.api.Assertions.assertThat;

import io.sumi.outbox.Outbox;
import io.sumi.outbox.OutboxMessage;
import io.sumi.outbox.OutboxTable;
import io.sumi.testing.MutableClock;
import io.sumi.testing.TestDatabase;
import java.time.Duration;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/** The outbox health indicator, one test per state, on H2. */
class SumiOutboxHealthIndicatorTests {

    private static final Status ATTENTION = new Status("DEGRADED");

    MutableClock clock;
    OutboxTable table;
    Outbox outbox;
    TransactionTemplate tx;
    JdbcTemplate jdbc;
    SumiOutboxHealthIndicator health;

    @BeforeEach
    void setUp() {
        DataSource dataSource = TestDatabase.privateH2();
        clock = MutableClock.at("2030-01-01T00:00:00Z");
        table = OutboxTable.builder(dataSource).clock(clock).build();
        outbox = Outbox.builder(table).build();
        tx = new TransactionTemplate(new DataSourceTransactionManager(dataSource));
        jdbc = new JdbcTemplate(dataSource);
        health = new SumiOutboxHealthIndicator(table, Duration.ofMinutes(5), ATTENTION);
    }

    long append() {
        return tx.execute(status -> outbox.append(OutboxMessage.of("agg", "topic", "{}")));
    }

    @Test
    void anEmptyOutboxIsUp() {
        Health result = health.health();

        assertThat(result.getStatus()).isEqualTo(Status.UP);
        assertThat(result.getDetails()).containsEntry("pending", 0L).containsEntry("parked", 0L);
        assertThat(result.getDetails()).doesNotContainKeys("action", "oldestDueAt");
    }

    @Test
    void aBacklogDueForLessThanTheMaxDueAgeIsUp() {
        append();
        clock.advance(Duration.ofMinutes(5));

        Health result = health.health();

        assertThat(result.getStatus()).isEqualTo(Status.UP);
        assertThat(result.getDetails())
                .containsEntry("pending", 1L)
                .containsEntry("oldestPendingAge", "PT5M")
                .containsKey("oldestDueAt")
                .doesNotContainKey("action");
    }

    @Test
    void aRowDueForLongerThanTheMaxDueAgeNeedsAttention() {
        append();
        clock.advance(Duration.ofMinutes(5).plusSeconds(1));

        Health result = health.health();

        assertThat(result.getStatus()).isEqualTo(ATTENTION);
        assertThat((String) result.getDetails().get("action")).contains("dispatcher");
    }

    @Test
    void aParkedRowNeedsAttentionWhateverItsAge() {
        long id = append();
        jdbc.update("UPDATE outbox SET parked_at = available_at WHERE id = ?", id);

        Health result = health.health();

        assertThat(result.getStatus()).isEqualTo(ATTENTION);
        assertThat(result.getDetails()).containsEntry("parked", 1L).containsEntry("pending", 0L);
        assertThat((String) result.getDetails().get("action")).contains("redrive");
    }
}
