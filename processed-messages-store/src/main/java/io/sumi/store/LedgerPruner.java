package io.sumi.store;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Deletes completed ledger rows older than the retention, in bounded batches: each batch is its
 * own short transaction, so pruning never holds long locks or grows one huge transaction. Safe to
 * run on every instance at once (PostgreSQL batches skip rows another instance has locked).
 * Rows still in progress are never deleted. Thread-safe; schedule {@link #prune()}.
 */
public final class LedgerPruner {

    /** Default retention of completed rows. */
    public static final Duration DEFAULT_RETENTION = Duration.ofDays(14);

    /** Default rows per delete statement. */
    public static final int DEFAULT_BATCH_SIZE = 1_000;

    /** Default bound on batches per run, so one run cannot go on for ever on a huge backlog. */
    public static final int DEFAULT_MAX_BATCHES = 1_000;

    private static final Logger log = LoggerFactory.getLogger(LedgerPruner.class);

    private final ProcessedMessageStore store;
    private final Clock clock;
    private final Duration retention;
    private final int batchSize;
    private final int maxBatches;
    private final Counter pruned;
    private final Counter succeeded;
    private final Counter failed;

    private LedgerPruner(Builder builder) {
        this.store = builder.store;
        this.clock = builder.clock;
        this.retention = builder.retention;
        this.batchSize = builder.batchSize;
        this.maxBatches = builder.maxBatches;
        this.pruned = Counter.builder("sumi.ledger.pruned")
                .description("Completed ledger rows deleted by the pruning job")
                .register(builder.meterRegistry);
        // Both results exist from the start, so "no failure yet" reads 0 rather than no series.
        this.succeeded = runs(builder.meterRegistry, "success");
        this.failed = runs(builder.meterRegistry, "failure");
    }

    private static Counter runs(MeterRegistry registry, String result) {
        return Counter.builder("sumi.ledger.pruning.runs")
                .description("Runs of the ledger pruning job, by result (success, failure)")
                .tag("result", result)
                .register(registry);
    }

    public static Builder builder(ProcessedMessageStore store) {
        return new Builder(store);
    }

    /**
     * Deletes completed rows processed before {@code now - retention}, batch by batch, until a batch
     * comes back short or {@code maxBatches} have run.
     *
     * @return how many rows were deleted
     */
    public int prune() {
        int total;
        try {
            total = pruneBatches();
        } catch (RuntimeException | Error ex) {
            failed.increment();
            throw ex;
        }
        succeeded.increment();
        return total;
    }

    private int pruneBatches() {
        Instant cutoff = clock.instant().minus(retention);
        int total = 0;
        for (int batch = 0; batch < maxBatches; batch++) {
            int deleted = store.deleteCompletedBefore(cutoff, batchSize);
            total += deleted;
            pruned.increment(deleted);
            if (deleted < batchSize) {
                break;
            }
        }
        if (total > 0) {
            log.info("Pruned {} completed ledger row(s) processed before {}", total, cutoff);
        }
        return total;
    }

    /** The retention of completed rows. */
    public Duration retention() {
        return retention;
    }

    /**
     * Builds a {@link LedgerPruner}.
     */
    public static final class Builder {

        private final ProcessedMessageStore store;
        private Clock clock = Clock.systemUTC();
        private Duration retention = DEFAULT_RETENTION;
        private int batchSize = DEFAULT_BATCH_SIZE;
        private int maxBatches = DEFAULT_MAX_BATCHES;
        private MeterRegistry meterRegistry = new CompositeMeterRegistry();

        private Builder(ProcessedMessageStore store) {
            this.store = Objects.requireNonNull(store, "store");
        }

        public Builder clock(Clock clock) {
            this.clock = Objects.requireNonNull(clock, "clock");
            return this;
        }

        /** How long completed rows are kept; must be positive. */
        public Builder retention(Duration retention) {
            if (retention.isNegative() || retention.isZero()) {
                throw new IllegalArgumentException("The ledger retention must be positive, was " + retention);
            }
            this.retention = retention;
            return this;
        }

        public Builder batchSize(int batchSize) {
            if (batchSize <= 0) {
                throw new IllegalArgumentException("The pruning batch size must be positive, was " + batchSize);
            }
            this.batchSize = batchSize;
            return this;
        }

        public Builder maxBatches(int maxBatches) {
            if (maxBatches <= 0) {
                throw new IllegalArgumentException("The pruning max batches must be positive, was " + maxBatches);
            }
            this.maxBatches = maxBatches;
            return this;
        }

        public Builder meterRegistry(MeterRegistry meterRegistry) {
            this.meterRegistry = Objects.requireNonNull(meterRegistry, "meterRegistry");
            return this;
        }

        public LedgerPruner build() {
            return new LedgerPruner(this);
        }
    }
}
