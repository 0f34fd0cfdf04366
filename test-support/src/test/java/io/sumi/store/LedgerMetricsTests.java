package io.sumi.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sumi.store.jdbc.JdbcProcessedMessageStore;
import io.sumi.testing.LedgerTime;
import io.sumi.testing.MutableClock;
import io.sumi.testing.TestDatabase;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The ledger gauges read the store at most once per refresh interval, keep their last values when
 * a read fails, and say NaN (not a reassuring 0) when the store cannot tell; the pruning job counts
 * its runs by result. On an H2 ledger of its own.
 */
class LedgerMetricsTests {

    private static final Duration LEASE = Duration.ofMinutes(5);

    private final MutableClock clock = new MutableClock(Instant.now());
    private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    private DataSource dataSource;
    private JdbcProcessedMessageStore store;

    /** Counts the stats reads, and fails them on demand. */
    private final class WatchedStore extends ForwardingProcessedMessageStore {
        final AtomicInteger reads = new AtomicInteger();
        final AtomicBoolean failing = new AtomicBoolean();

        WatchedStore() {
            super(store);
        }

        @Override
        public Map<String, ConsumerLedgerStats> consumerStats() {
            reads.incrementAndGet();
            if (failing.get()) {
                throw new IllegalStateException("database down");
            }
            return super.consumerStats();
        }

        @Override
        public int deleteCompletedBefore(Instant cutoff, int limit) {
            if (failing.get()) {
                throw new IllegalStateException("database down");
            }
            return super.deleteCompletedBefore(cutoff, limit);
        }
    }

    @BeforeEach
    void setUp() {
        dataSource = TestDatabase.privateH2();
        store = JdbcProcessedMessageStore.builder(dataSource).build();
    }

    @AfterEach
    void dropDatabase() {
        new JdbcTemplate(dataSource).execute("SHUTDOWN");
    }

    private double gauge(String name, String consumer) {
        return meters.get(name).tag("consumer", consumer).gauge().value();
    }

    @Test
    void gaugesPerConsumerReadTheLedgerOncePerRefreshInterval() {
        WatchedStore watched = new WatchedStore();
        new LedgerMetrics(watched, Set.of("mail", "charge", "idle"), Duration.ofSeconds(10), clock).bindTo(meters);
        ProcessedMessage held =
                store.claim("charge", new ClaimRequest("c1", null), LEASE).message();
        store.markForReconciliation(held, "uncertain");
        store.claim("mail", new ClaimRequest("m1", null), LEASE);
        LedgerTime.age(dataSource, "mail", Duration.ofSeconds(90));

        assertThat(gauge(LedgerMetrics.OLDEST_CLAIM_AGE, "mail")).isBetween(90.0, 120.0);
        assertThat(gauge(LedgerMetrics.RECONCILIATION_HELD, "charge")).isEqualTo(1.0);
        assertThat(gauge(LedgerMetrics.OLDEST_CLAIM_AGE, "idle")).isZero();
        assertThat(gauge(LedgerMetrics.RECONCILIATION_HELD, "mail")).isZero();
        assertThat(watched.reads).as("four gauges read, one query").hasValue(1);

        store.markForReconciliation(
                store.claim("charge", new ClaimRequest("c2", null), LEASE).message(), "uncertain");
        assertThat(gauge(LedgerMetrics.RECONCILIATION_HELD, "charge"))
                .as("cached within the interval")
                .isEqualTo(1.0);
        clock.advance(Duration.ofSeconds(10));
        assertThat(gauge(LedgerMetrics.RECONCILIATION_HELD, "charge")).isEqualTo(2.0);
        assertThat(watched.reads).hasValue(2);

        watched.failing.set(true);
        clock.advance(Duration.ofSeconds(10));
        assertThat(gauge(LedgerMetrics.RECONCILIATION_HELD, "charge"))
                .as("a failed read keeps the last values")
                .isEqualTo(2.0);
        assertThat(watched.reads).hasValue(3);
    }

    @Test
    void aStoreThatCannotTellReadsNaNNotZero() {
        ProcessedMessageStore blind = new ForwardingProcessedMessageStore(store) {
            @Override
            public Map<String, ConsumerLedgerStats> consumerStats() {
                throw new UnsupportedOperationException("no stats here");
            }
        };
        new LedgerMetrics(blind, Set.of("mail"), Duration.ZERO, clock).bindTo(meters);

        assertThat(gauge(LedgerMetrics.OLDEST_CLAIM_AGE, "mail")).isNaN();
        assertThat(gauge(LedgerMetrics.RECONCILIATION_HELD, "mail")).isNaN();
    }

    @Test
    void pruningRunsAreCountedByResult() {
        WatchedStore watched = new WatchedStore();
        LedgerPruner pruner =
                LedgerPruner.builder(watched).meterRegistry(meters).build();
        assertThat(runs("failure")).as("registered before the first run").isZero();

        pruner.prune();
        watched.failing.set(true);
        assertThatThrownBy(pruner::prune).hasMessage("database down");

        assertThat(runs("success")).isEqualTo(1.0);
        assertThat(runs("failure")).isEqualTo(1.0);
    }

    private double runs(@Nullable String result) {
        return meters.get("sumi.ledger.pruning.runs")
                .tag("result", result)
                .counter()
                .count();
    }
}
