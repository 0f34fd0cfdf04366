package io.sumi.store;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.locks.ReentrantLock;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The ledger's gauges, one of each per consumer, read from the store
 * ({@link ProcessedMessageStore#consumerStats()}) at most once per {@code refreshInterval},
 * whoever reads them (a scrape of every gauge costs one read, and concurrent scrapes do not queue
 * up behind it):
 * <ul>
 *   <li>{@code sumi.ledger.claims.oldest.age} (seconds): how long ago the oldest message the
 *   consumer holds a live claim on was first claimed (0 when it holds none). A value above the
 *   consumer's lease means a handler running longer than its lease (renewed) or a message retried
 *   for that long.</li>
 *   <li>{@code sumi.ledger.reconciliation.held}: rows held for reconciliation, waiting for an
 *   operator.</li>
 * </ul>
 * If the store cannot be read, the gauges keep their last values (logged at debug level); if the
 * store cannot report these stats at all, they read {@code NaN}. Thread-safe.
 *
 * @since 0.1.0
 */
public final class LedgerMetrics implements MeterBinder {

    /** Default minimum time between two reads of the ledger. */
    public static final Duration DEFAULT_REFRESH_INTERVAL = Duration.ofSeconds(10);

    static final String OLDEST_CLAIM_AGE = "sumi.ledger.claims.oldest.age";
    static final String RECONCILIATION_HELD = "sumi.ledger.reconciliation.held";

    private static final Logger log = LoggerFactory.getLogger(LedgerMetrics.class);

    private final ProcessedMessageStore store;
    private final Set<String> consumers;
    private final Duration refreshInterval;
    private final Clock clock;
    private final ReentrantLock refreshing = new ReentrantLock();
    private volatile Map<String, ConsumerLedgerStats> stats = Map.of();
    private volatile @Nullable Instant readAt;
    private volatile boolean unsupported;

    /**
     * @param consumers the consumers to register gauges for (the ledger namespaces of the
     *     application's handlers)
     * @param refreshInterval the minimum time between two reads of the ledger (zero: every read)
     */
    public LedgerMetrics(ProcessedMessageStore store, Set<String> consumers, Duration refreshInterval, Clock clock) {
        this.store = Objects.requireNonNull(store, "store");
        this.consumers = Set.copyOf(consumers);
        this.clock = Objects.requireNonNull(clock, "clock");
        if (refreshInterval.isNegative()) {
            throw new IllegalArgumentException("The refresh interval must not be negative, was " + refreshInterval);
        }
        this.refreshInterval = refreshInterval;
    }

    /** The consumers this binder registers gauges for. */
    public Set<String> consumers() {
        return consumers;
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        for (String consumer : List.copyOf(consumers)) {
            Gauge.builder(OLDEST_CLAIM_AGE, this, metrics -> metrics.oldestLiveClaimSeconds(consumer))
                    .description("How long ago the oldest message the consumer holds a live claim on was first claimed")
                    .tag("consumer", consumer)
                    .baseUnit("seconds")
                    .strongReference(true)
                    .register(registry);
            Gauge.builder(RECONCILIATION_HELD, this, metrics -> metrics.held(consumer))
                    .description("Ledger rows held for reconciliation, waiting for an operator")
                    .tag("consumer", consumer)
                    .strongReference(true)
                    .register(registry);
        }
    }

    double oldestLiveClaimSeconds(String consumer) {
        Map<String, ConsumerLedgerStats> current = current();
        if (unsupported) {
            return Double.NaN;
        }
        ConsumerLedgerStats row = current.get(consumer);
        return row == null ? 0 : row.oldestLiveClaimAge().toNanos() / 1e9;
    }

    double held(String consumer) {
        Map<String, ConsumerLedgerStats> current = current();
        if (unsupported) {
            return Double.NaN;
        }
        ConsumerLedgerStats row = current.get(consumer);
        return row == null ? 0 : row.heldForReconciliation();
    }

    /** The stats by consumer, read again if the last read is older than the refresh interval. */
    public Map<String, ConsumerLedgerStats> current() {
        Instant now = clock.instant();
        Instant last = readAt;
        if (unsupported || (last != null && Duration.between(last, now).compareTo(refreshInterval) < 0)) {
            return stats;
        }
        // One reader refreshes; concurrent readers take the last value instead of queueing.
        if (refreshing.tryLock()) {
            try {
                stats = store.consumerStats();
                readAt = now;
            } catch (UnsupportedOperationException ex) {
                unsupported = true;
                log.info("The ledger gauges read NaN: {}", ex.getMessage());
            } catch (RuntimeException ex) {
                log.debug("Could not read the ledger stats; the gauges keep their last values", ex);
            } finally {
                refreshing.unlock();
            }
        }
        return stats;
    }
}
