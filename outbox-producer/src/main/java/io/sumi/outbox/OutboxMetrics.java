package io.sumi.outbox;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.time.Duration;
import java.time.Instant;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The outbox's backlog gauges, read from the table (one query for all of them, at most once per
 * {@code refreshInterval}, whoever reads them):
 * <ul>
 *   <li>{@code outbox.pending.total}: rows not dispatched and not parked;</li>
 *   <li>{@code outbox.parked}: parked rows, waiting for an operator;</li>
 *   <li>{@code outbox.oldest.pending.age} (seconds): how long the most overdue pending row has
 *   been due.</li>
 * </ul>
 * The dispatcher's own meters ({@code outbox.dispatch.latency}, {@code outbox.attempts}, ...) are
 * registered by {@link OutboxDispatcher}. If the table cannot be read, the gauges keep their last
 * values (and the failure is logged at debug level). Thread-safe.
 */
public final class OutboxMetrics implements MeterBinder {

    /** Default minimum time between two reads of the table. */
    public static final Duration DEFAULT_REFRESH_INTERVAL = Duration.ofSeconds(10);

    private static final Logger log = LoggerFactory.getLogger(OutboxMetrics.class);

    private final OutboxTable table;
    private final Duration refreshInterval;
    private final ReentrantLock refreshing = new ReentrantLock();
    private volatile OutboxStats stats = OutboxStats.EMPTY;
    private volatile @Nullable Instant readAt;
    private final Set<MeterRegistry> boundTo = Collections.newSetFromMap(new IdentityHashMap<>());

    public OutboxMetrics(OutboxTable table) {
        this(table, DEFAULT_REFRESH_INTERVAL);
    }

    /**
     * @param refreshInterval the minimum time between two reads of the table (zero: every read)
     */
    public OutboxMetrics(OutboxTable table, Duration refreshInterval) {
        this.table = Objects.requireNonNull(table, "table");
        if (refreshInterval.isNegative()) {
            throw new IllegalArgumentException("The refresh interval must not be negative, was " + refreshInterval);
        }
        this.refreshInterval = refreshInterval;
    }

    /**
     * Registers the gauges in {@code registry}, once: binding again to the same registry does
     * nothing (the starter binds them, and Spring Boot binds every {@code MeterBinder} bean too;
     * Micrometer would ignore the second registration with a WARN).
     */
    @Override
    public void bindTo(MeterRegistry registry) {
        synchronized (boundTo) {
            if (!boundTo.add(registry)) {
                return;
            }
        }
        Gauge.builder("outbox.pending.total", this, metrics -> metrics.current().pending())
                .description("Outbox rows not dispatched yet (not counting parked rows)")
                .register(registry);
        Gauge.builder("outbox.parked", this, metrics -> metrics.current().parked())
                .description("Outbox rows parked after too many failed sends, waiting for an operator")
                .register(registry);
        Gauge.builder(
                        "outbox.oldest.pending.age",
                        this,
                        metrics -> seconds(metrics.current().oldestPendingAge()))
                .description("How long the most overdue pending outbox row has been due")
                .baseUnit("seconds")
                .register(registry);
    }

    /** The stats, read again if the last read is older than the refresh interval. */
    public OutboxStats current() {
        Instant now = table.clock().instant();
        Instant last = readAt;
        if (last != null && Duration.between(last, now).compareTo(refreshInterval) < 0) {
            return stats;
        }
        // One reader refreshes; concurrent readers take the last value instead of queueing.
        if (refreshing.tryLock()) {
            try {
                stats = table.stats();
                readAt = now;
            } catch (RuntimeException ex) {
                log.debug("Could not read the outbox stats; the gauges keep their last values", ex);
            } finally {
                refreshing.unlock();
            }
        }
        return stats;
    }

    static double seconds(Duration duration) {
        return duration.toNanos() / (double) TimeUnit.SECONDS.toNanos(1);
    }
}
