package io.sumi.outbox;

import io.sumi.outbox.internal.Jdbc;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps the claim's plan from stale planner statistics: at most once per interval, after a claim
 * took a full batch (a backlog at least that deep; smaller claims are cheap whatever the plan), reads what the statistics count of the pending rows
 * ({@link OutboxDialect#pendingEstimate}); fewer than that claim took proves them stale, and they
 * are refreshed ({@link OutboxDialect#analyze}). The check is one catalog query; the refresh
 * happens when a burst meets statistics taken while everything was dispatched, which the database
 * itself may not correct for a long time (see {@link PostgresOutboxDialect#pendingEstimate}).
 *
 * <p>A refresh that leaves the count short (a small burst in a big table, which the sample of
 * {@code ANALYZE} misses) is not repeated at every check: the next waits twice as long each time,
 * up to {@link #MAX_REFRESH_BACKOFF}, until a check finds the count right. A user who may not
 * refresh them (not the table's owner) gets one WARN and no refresh.
 *
 * <p>It runs before a claim, on the claiming thread, never between a claim and its send: a batch
 * already claimed is never delayed by it (its send deadline runs from its claim). A failure is
 * logged and the claim goes on: the check only ever helps the plan.
 *
 * <p>Thread-safe: one check runs at a time per dispatcher; the others skip it.
 */
final class StatisticsCheck {

    static final Duration MAX_REFRESH_BACKOFF = Duration.ofMinutes(10);

    private static final Logger log = LoggerFactory.getLogger(StatisticsCheck.class);

    private final OutboxTable table;
    private final long intervalNanos;
    private final DispatcherMetrics metrics;
    private final int batchSize;
    /** The rows of the last full claim, until a check reads them; 0: nothing to check. */
    private final AtomicInteger lastClaimed = new AtomicInteger();

    private final AtomicBoolean running = new AtomicBoolean();
    // Read and written only by the thread that set running (its CAS orders them).
    private long nextCheckAt;
    private long refreshNotBefore;
    private long refreshBackoffNanos;
    private boolean warnedNotRefreshable;

    /** {@code interval} zero: never checks. */
    StatisticsCheck(OutboxTable table, Duration interval, int batchSize, DispatcherMetrics metrics) {
        this.table = table;
        this.batchSize = batchSize;
        this.intervalNanos = interval.toNanos();
        this.metrics = metrics;
        this.nextCheckAt = System.nanoTime();
        this.refreshNotBefore = nextCheckAt;
    }

    /** Notes what a claim took; cheap, on the claim's path. */
    void claimed(int rows) {
        if (rows >= batchSize && intervalNanos > 0) {
            lastClaimed.set(rows);
        }
    }

    /** Checks, and refreshes where needed, if a full claim happened since and the interval has passed. */
    void runIfDue() {
        if (intervalNanos == 0 || lastClaimed.get() == 0 || !running.compareAndSet(false, true)) {
            return;
        }
        try {
            long now = System.nanoTime();
            if (now - nextCheckAt < 0) {
                return;
            }
            nextCheckAt = now + intervalNanos;
            int claimed = lastClaimed.getAndSet(0);
            if (claimed > 0) {
                check(claimed, now);
            }
        } catch (RuntimeException ex) {
            log.warn("Could not check the planner's statistics of outbox table {}", table.tableName(), ex);
        } finally {
            running.set(false);
        }
    }

    private void check(int claimed, long now) {
        OutboxDialect dialect = table.dialect();
        Jdbc.inOwnTransaction(table.dataSource(), "statistics check", connection -> {
            OutboxDialect.PendingEstimate estimate = dialect.pendingEstimate(connection);
            if (estimate == null || estimate.pendingRows() >= claimed) {
                refreshBackoffNanos = 0;
                return Boolean.FALSE;
            }
            if (!estimate.refreshable()) {
                warnNotRefreshable(claimed);
                return Boolean.FALSE;
            }
            if (now - refreshNotBefore < 0) {
                return Boolean.FALSE;
            }
            dialect.analyze(connection);
            metrics.statisticsRefreshed();
            OutboxDialect.PendingEstimate after = dialect.pendingEstimate(connection);
            if (after == null || after.pendingRows() >= claimed) {
                refreshBackoffNanos = 0;
                log.info(
                        "The planner's statistics of outbox table {} counted fewer pending rows than a claim took"
                                + " ({}); refreshed them (ANALYZE) so that the claim keeps its plan",
                        table.tableName(),
                        claimed);
            } else {
                refreshBackoffNanos =
                        Math.min(Math.max(2 * refreshBackoffNanos, intervalNanos), MAX_REFRESH_BACKOFF.toNanos());
                refreshNotBefore = now + refreshBackoffNanos;
                log.debug(
                        "ANALYZE of outbox table {} still counts fewer pending rows than a claim took ({}): its"
                                + " sample missed them; the next refresh waits {} ms",
                        table.tableName(),
                        claimed,
                        refreshBackoffNanos / 1_000_000);
            }
            return Boolean.TRUE;
        });
    }

    private void warnNotRefreshable(int claimed) {
        if (!warnedNotRefreshable) {
            warnedNotRefreshable = true;
            log.warn(
                    "The planner's statistics of outbox table {} count fewer pending rows than a claim took ({}), and"
                            + " this user may not refresh them (ANALYZE needs the table's owner): a claim may read"
                            + " every pending row until autovacuum analyzes the table; see docs/outbox.md,"
                            + " \"Planner statistics\"",
                    table.tableName(),
                    claimed);
        }
    }
}
