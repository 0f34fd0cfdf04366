package io.sumi.outbox;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import io.sumi.outbox.internal.Jdbc;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The outbox's retention job: deletes rows dispatched before {@code now - retention} in bounded
 * batches, each its own short transaction, so it never holds long locks or grows one huge
 * transaction. Pending and parked rows are never deleted. Safe to run on every instance at once
 * (PostgreSQL batches skip rows another instance has locked). Thread-safe; schedule
 * {@link #prune()}.
 */
public final class OutboxPruner {

    /** Default retention of dispatched rows. */
    public static final Duration DEFAULT_RETENTION = Duration.ofDays(30);

    /** Default rows per delete statement. */
    public static final int DEFAULT_BATCH_SIZE = 1_000;

    /** Default bound on batches per run, so one run cannot go on for ever on a huge backlog. */
    public static final int DEFAULT_MAX_BATCHES = 1_000;

    private static final Logger log = LoggerFactory.getLogger(OutboxPruner.class);

    private final OutboxTable table;
    private final Duration retention;
    private final int batchSize;
    private final int maxBatches;
    private final Counter pruned;

    private OutboxPruner(Builder builder) {
        this.table = builder.table;
        this.retention = builder.retention;
        this.batchSize = builder.batchSize;
        this.maxBatches = builder.maxBatches;
        this.pruned = Counter.builder("outbox.pruned")
                .description("Dispatched outbox rows deleted by the retention job")
                .register(builder.meterRegistry);
    }

    public static Builder builder(OutboxTable table) {
        return new Builder(table);
    }

    /**
     * Deletes rows dispatched before {@code now - retention}, batch by batch, until a batch comes
     * back short or {@code maxBatches} have run.
     *
     * @return how many rows were deleted
     */
    public int prune() {
        Instant cutoff = table.clock().instant().minus(retention);
        int total = 0;
        for (int batch = 0; batch < maxBatches; batch++) {
            int deleted = Jdbc.inOwnTransaction(
                    table.dataSource(),
                    "prune",
                    connection -> table.dialect().deleteDispatchedBefore(connection, cutoff, batchSize));
            total += deleted;
            pruned.increment(deleted);
            if (deleted < batchSize) {
                break;
            }
        }
        if (total > 0) {
            log.info("Pruned {} outbox row(s) dispatched before {}", total, cutoff);
        }
        return total;
    }

    /** The retention of dispatched rows. */
    public Duration retention() {
        return retention;
    }

    /**
     * Builds an {@link OutboxPruner}.
     */
    public static final class Builder {

        private final OutboxTable table;
        private Duration retention = DEFAULT_RETENTION;
        private int batchSize = DEFAULT_BATCH_SIZE;
        private int maxBatches = DEFAULT_MAX_BATCHES;
        private MeterRegistry meterRegistry = new CompositeMeterRegistry();

        private Builder(OutboxTable table) {
            this.table = Objects.requireNonNull(table, "table");
        }

        /** How long dispatched rows are kept; must be positive. */
        public Builder retention(Duration retention) {
            if (retention.isNegative() || retention.isZero()) {
                throw new IllegalArgumentException("The outbox retention must be positive, was " + retention);
            }
            this.retention = retention;
            return this;
        }

        public Builder batchSize(int batchSize) {
            if (batchSize <= 0) {
                throw new IllegalArgumentException("The outbox pruning batch size must be positive, was " + batchSize);
            }
            this.batchSize = batchSize;
            return this;
        }

        public Builder maxBatches(int maxBatches) {
            if (maxBatches <= 0) {
                throw new IllegalArgumentException(
                        "The outbox pruning max batches must be positive, was " + maxBatches);
            }
            this.maxBatches = maxBatches;
            return this;
        }

        public Builder meterRegistry(MeterRegistry meterRegistry) {
            this.meterRegistry = Objects.requireNonNull(meterRegistry, "meterRegistry");
            return this;
        }

        public OutboxPruner build() {
            return new OutboxPruner(this);
        }
    }
}
