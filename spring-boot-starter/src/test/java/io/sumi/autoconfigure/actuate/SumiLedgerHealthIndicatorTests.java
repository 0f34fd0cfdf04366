package io.sumi.autoconfigure.actuate;

import static org.assertj.core.api.Assertions.assertThat;

import io.sumi.autoconfigure.actuate.internal.SumiReadModels;
import io.sumi.store.ClaimRequest;
import io.sumi.store.ClaimResult;
import io.sumi.store.ConsumerLedgerStats;
import io.sumi.store.ForwardingProcessedMessageStore;
import io.sumi.store.ProcessedMessageStore;
import io.sumi.store.jdbc.JdbcProcessedMessageStore;
import io.sumi.testing.TestDatabase;
import java.time.Duration;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The ledger health indicator, one test per state, on an H2 ledger of its own: read through the
 * read models (a JDBC ledger) and through the store (how the Redis ledger is read), and a store
 * that does not answer.
 */
class SumiLedgerHealthIndicatorTests {

    private static final Status ATTENTION = new Status("DEGRADED");
    private static final Duration LEASE = Duration.ofMinutes(5);

    private final DataSource dataSource = TestDatabase.privateH2();
    private final JdbcProcessedMessageStore store =
            JdbcProcessedMessageStore.builder(dataSource).build();
    private final SumiLedgerHealthIndicator fromReadModels =
            new SumiLedgerHealthIndicator(new SumiReadModels(dataSource, "processed_messages", "outbox"), ATTENTION);
    private final SumiLedgerHealthIndicator fromStore = new SumiLedgerHealthIndicator(store, "redis", ATTENTION);

    @AfterEach
    void dropDatabase() {
        new JdbcTemplate(dataSource).execute("SHUTDOWN");
    }

    private void holdForReconciliation(String consumer, String key) {
        ClaimResult claim = store.claim(consumer, new ClaimRequest(key, null), LEASE);
        assertThat(store.markForReconciliation(claim.message(), "timed out at the provider"))
                .isTrue();
    }

    @Test
    void aLedgerWithNothingHeldIsUpWhateverItHolds() {
        ClaimResult live = store.claim("mail", new ClaimRequest("running", null), LEASE);
        store.complete(
                store.claim("mail", new ClaimRequest("done", null), LEASE).message());
        assertThat(live.message()).isNotNull();

        for (SumiLedgerHealthIndicator indicator : new SumiLedgerHealthIndicator[] {fromReadModels, fromStore}) {
            Health health = indicator.health();

            assertThat(health.getStatus()).isEqualTo(Status.UP);
            assertThat(health.getDetails())
                    .containsEntry("heldForReconciliation", 0L)
                    .containsEntry("heldByConsumer", Map.of())
                    .doesNotContainKey("action");
        }
        assertThat(fromStore.health().getDetails()).containsEntry("store", "redis");
        assertThat(fromReadModels.health().getDetails()).doesNotContainKey("store");
    }

    @Test
    void rowsHeldForReconciliationGiveTheAttentionStatusWithTheCountsAndWhatToDo() {
        holdForReconciliation("payments", "p-1");
        holdForReconciliation("payments", "p-2");
        holdForReconciliation("mail", "m-1");

        for (SumiLedgerHealthIndicator indicator : new SumiLedgerHealthIndicator[] {fromReadModels, fromStore}) {
            Health health = indicator.health();

            assertThat(health.getStatus()).isEqualTo(ATTENTION);
            assertThat(health.getDetails())
                    .containsEntry("heldForReconciliation", 3L)
                    .containsEntry("heldByConsumer", Map.of("mail", 1L, "payments", 2L));
            assertThat((String) health.getDetails().get("action")).contains("/actuator/sumi/reconciliation");
        }
    }

    @Test
    void resolvedRowsNoLongerCount() {
        holdForReconciliation("payments", "p-1");
        assertThat(store.completeReconciled("payments", "p-1")).isTrue();

        assertThat(fromReadModels.health().getStatus()).isEqualTo(Status.UP);
        assertThat(fromStore.health().getStatus()).isEqualTo(Status.UP);
    }

    @Test
    void aStoreThatDoesNotAnswerIsDownWithTheError() {
        ProcessedMessageStore unreachable = new ForwardingProcessedMessageStore(store) {
            @Override
            public Map<String, ConsumerLedgerStats> consumerStats() {
                throw new IllegalStateException("Redis is unavailable");
            }
        };

        Health health = new SumiLedgerHealthIndicator(unreachable, "redis", ATTENTION).health();

        assertThat(health.getStatus()).isEqualTo(Status.DOWN);
        assertThat(health.getDetails()).containsEntry("store", "redis");
        assertThat(String.valueOf(health.getDetails().get("error"))).contains("Redis is unavailable");
    }
}
