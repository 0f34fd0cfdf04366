package io.sumi.outbox;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.DoubleSupplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.dao.DataAccessException;

/**
 * Sends committed outbox rows through an {@link OutboxPublisher}. Run one per application instance
 * ({@link #start()}), or call {@link #dispatchOnce()} from a scheduler of your own.
 *
 * <h2>One round ({@link #dispatchOnce()})</h2>
 * <ol>
 *   <li><b>Claim</b>: one statement picks up to {@code batchSize} due rows in id order with
 *   {@code FOR UPDATE SKIP LOCKED} and writes a fresh random claim token and a lease
 *   ({@code lease_until} = the database's current time + lease) on them, and commits. No lock is
 *   held after this; the lease is what keeps other dispatchers off the rows while they are sent.</li>
 *   <li><b>Send</b>: the batch goes to the publisher with what is left of the send timeout
 *   (counted from the start of the claim). The publisher returns once every record is
 *   acknowledged or failed, or when the deadline passes; if it has not returned shortly after the
 *   deadline, the dispatching thread is interrupted. Rows without an acknowledgement by then count
 *   a failed attempt.</li>
 *   <li><b>Mark</b>: acknowledged rows are marked dispatched in one statement (guarded by the claim
 *   token); each failed row gets {@code attempts + 1}, {@code last_error} and
 *   {@code available_at = now + backoff}, or is parked when that was its last allowed attempt. If
 *   the database cannot be reached, the marks are tried again with a short back-off while the
 *   lease is surely still ours. {@code last_error} is stored as every column holds it (no NUL, no
 *   4-byte characters, at most 1,000 characters); if the database still refuses the marks for
 *   their content, they are recorded row by row (a failed row without its text if need be), so
 *   one row never holds back the others' marks.</li>
 * </ol>
 *
 * <h2>Time</h2>
 * Leases are counted by the database's clock, never by a JVM's: dispatchers whose clocks disagree
 * never take each other's live leases. The injected {@link java.time.Clock} (from the
 * {@link OutboxTable}) decides due times (delays, back-off) and the recorded times
 * ({@code created_at}, {@code dispatched_at}, {@code parked_at}).
 *
 * <h2>Concurrency</h2>
 * Several dispatchers (threads or instances) may run at once. Two claims never return the same
 * row: the picking {@code SELECT} skips rows another claim has locked, and a row another claim has
 * already leased fails the lease test on its newest version. Because the claim commits before the
 * send (the seed article's bug was to send while relying on a {@code FOR UPDATE} lock that was
 * already released by that commit), the lease, not a lock, is the guard. A row is claimed by
 * another dispatcher only after its lease has expired, and the send timeout (at most half the
 * lease, checked by {@link Builder#build()}) ends every send well before that. So a row is sent by
 * two dispatchers only if (a) a process stalls (GC pause, suspended VM) for longer than
 * {@code lease - sendTimeout} between its claim and the end of its send, or (b) the dispatcher
 * could not record the outcome before its lease ended (it died, or the database stayed
 * unreachable), or (c) the broker kept a record whose acknowledgement did not arrive in time (the
 * row counts as failed and is sent again after its back-off). A late mark of a stale claim is a
 * no-op (the claim token no longer matches). Consumers dedup by {@link OutboxHeaders#OUTBOX_ID}.
 *
 * <h2>Ordering</h2>
 * For ordered topics (all topics by default) a row is claimed only when no earlier row of the same
 * topic and aggregate is undispatched: not while one is being sent by another dispatcher, waits
 * out a backoff, or is parked. So per aggregate, row N+1 is sent only after row N was acknowledged
 * and marked. Other aggregates are not held up. The price: one row per aggregate per round.
 *
 * <h2>Failures and at-least-once</h2>
 * A dispatcher that dies between the send and the mark leaves its rows leased; when the lease
 * ends, another round sends them again. Consumers dedup by {@link OutboxHeaders#OUTBOX_ID}. An
 * exception thrown by the publisher fails the whole batch.
 *
 * <h2>Retrofit switches</h2>
 * Shadow topics: rows are marked dispatched ({@link DispatchOutcome#SHADOW}) without being sent.
 * Cutoff: rows created before it are marked dispatched ({@link DispatchOutcome#SKIPPED}) without
 * being sent.
 *
 * <h2>Pipelining</h2>
 * The loop started by {@link #start()} keeps up to {@link Builder#pipelineDepth pipelineDepth}
 * batches claimed and not yet marked: it claims the next batch while earlier ones await their
 * acknowledgements, each sent and marked on a sender thread of its own. Each batch is a round as
 * above, with its own claim token, lease and send deadline; ordered topics keep their order per
 * aggregate because a row is claimed only after every earlier row of its aggregate is marked. On
 * unordered topics batches may overtake each other. Depth 1 runs claim, send and mark one after
 * the other on the loop's thread.
 *
 * <h2>Polling</h2>
 * The loop started by {@link #start()} runs rounds back to back while they find rows. When a round
 * finds none it waits: {@code minPollInterval} first, doubling after each empty round up to
 * {@code maxPollInterval}, so an idle outbox costs one query every few seconds. {@link #wakeUp()}
 * (called after the commit of an appending transaction, see {@link Outbox.Builder#afterCommit})
 * ends the wait at once and resets it to the minimum.
 *
 * <p>Thread-safe.
 */
public final class OutboxDispatcher implements AutoCloseable {

    /** In a topic list: every topic. */
    public static final String ALL_TOPICS = "*";

    /** Default rows per claim. */
    public static final int DEFAULT_BATCH_SIZE = 200;

    /** Default lease of a claim, counted by the database's clock; at least twice the send timeout. */
    public static final Duration DEFAULT_LEASE = Duration.ofMinutes(2);

    /**
     * Default bound on sending one batch, counted from the start of its claim: rows without an
     * acknowledgement by then count a failed attempt. At most half the lease.
     */
    public static final Duration DEFAULT_SEND_TIMEOUT = Duration.ofSeconds(30);

    /** Default failed sends after which a row is parked (about two hours of retries with the default backoff). */
    public static final int DEFAULT_MAX_ATTEMPTS = 12;

    /** Default wait after the first empty round. */
    public static final Duration DEFAULT_MIN_POLL_INTERVAL = Duration.ofMillis(500);

    /** Default longest wait between polls of an idle outbox. */
    public static final Duration DEFAULT_MAX_POLL_INTERVAL = Duration.ofSeconds(5);

    /**
     * Default number of batches the loop keeps claimed and not yet marked: it claims the next
     * batch while the previous one awaits its acknowledgements. 1 is claim, send, mark one after
     * the other.
     */
    public static final int DEFAULT_PIPELINE_DEPTH = 2;

    /**
     * Default bound on how often the dispatcher checks the outbox's planner statistics
     * ({@link Builder#statisticsCheckInterval}).
     */
    public static final Duration DEFAULT_STATISTICS_CHECK_INTERVAL = Duration.ofSeconds(10);

    private static final Logger log = LoggerFactory.getLogger(OutboxDispatcher.class);

    // Design: a dispatcher is two parts with one config. DispatchRound is one claim → send → mark,
    // with no thread and no state between rounds; DispatchLoop owns the thread, the wake-ups and
    // the idle back-off, and knows of a round only whether it found rows. SendDeadline bounds the
    // publisher's call within a round.

    private final DispatcherConfig config;
    private final DispatchRound round;
    private final DispatchLoop<DispatchRound.Claimed> loop;

    private OutboxDispatcher(DispatcherConfig config) {
        this.config = config;
        this.round = new DispatchRound(config);
        this.loop = new DispatchLoop<>(
                new DispatchLoop.Round<>() {
                    @Override
                    public DispatchRound.@Nullable Claimed claim() {
                        DispatchRound.Claimed claimed = round.claim();
                        return claimed.isEmpty() ? null : claimed;
                    }

                    @Override
                    public void complete(DispatchRound.Claimed batch) {
                        round.complete(batch);
                    }

                    @Override
                    public boolean mayHaveLeftRows(DispatchRound.Claimed batch) {
                        return batch.rows().size() >= config.batchSize();
                    }
                },
                config.pipelineDepth(),
                config.minPollInterval(),
                config.maxPollInterval());
    }

    /** Starts a builder for a dispatcher of {@code table}'s rows through {@code publisher}. */
    public static Builder builder(OutboxTable table, OutboxPublisher publisher) {
        return new Builder(table, publisher);
    }

    /**
     * Runs one round: claim, send, mark.
     *
     * @return what the round did
     * @throws DataAccessException if the claim fails (nothing was sent), or if the marks still fail
     *     after a send when the lease is about to end or the failure is not one of a lost or
     *     locked connection (the rows stay leased and are sent again when the lease ends)
     */
    public DispatchResult dispatchOnce() {
        return round.run().result();
    }

    /**
     * Dispatches those of {@code ids} that a round could claim now, under the same rules as
     * {@link #dispatchOnce()} (pending, not parked, due, no live lease, per-aggregate order), and
     * leaves the others alone: the path of a dispatcher that learns of new rows from elsewhere
     * than a poll (the CDC module reads them from the database's log). Rows of {@code ids} that
     * wait for an earlier row of their aggregate in {@code ids} are claimed in further rounds, once
     * that row is marked; a row that is delayed, leased by another dispatcher, behind an earlier row
     * not in {@code ids}, or whose send fails (it is scheduled for a retry as in any round) is left
     * to the polling loop. Runs on the caller's thread, in rounds of at most {@code batchSize} rows;
     * returns once every claimed row is sent and marked. PostgreSQL only.
     *
     * @return what the rounds did, summed
     * @throws DataAccessException as {@link #dispatchOnce()}; rows already marked stay marked
     * @throws UnsupportedOperationException on a database other than PostgreSQL
     */
    public DispatchResult dispatchAmong(Collection<Long> ids) {
        java.util.TreeSet<Long> remaining = new java.util.TreeSet<>(ids);
        DispatchResult total = DispatchResult.NOTHING;
        while (!remaining.isEmpty()) {
            List<Long> chunk = new ArrayList<>(Math.min(remaining.size(), round.batchSize()));
            for (Long id : remaining) {
                if (chunk.size() == round.batchSize()) {
                    break;
                }
                chunk.add(id);
            }
            DispatchRound.Claimed claimed = round.claimAmong(chunk);
            if (claimed.isEmpty()) {
                if (chunk.size() == remaining.size()) {
                    break;
                }
                // None of this chunk is claimable now: the later ids may still be.
                remaining.removeAll(chunk);
                continue;
            }
            DispatchResult result = round.complete(claimed).result();
            total = total.plus(result);
            claimed.rows().forEach(row -> remaining.remove(row.id()));
        }
        return total;
    }

    /**
     * Ends the current wait of the loop at once (a no-op if it is not waiting; the next wait is
     * then skipped). Non-blocking; call it after a transaction that appended rows commits.
     */
    public void wakeUp() {
        loop.wakeUp();
    }

    /** Starts the dispatch loop on a daemon thread of its own. Idempotent. */
    public void start() {
        if (loop.start()) {
            log.info(
                    "Outbox dispatcher started on table {} (batch {}, pipeline depth {}, ordered: {}, shadow: {}{})",
                    config.table().tableName(),
                    config.batchSize(),
                    config.pipelineDepth(),
                    config.orderedTopics(),
                    config.shadowTopics(),
                    config.cutoff() == null ? "" : ", cutoff " + config.cutoff());
        }
    }

    /**
     * Stops the loop: it claims nothing more and lets the batches in flight finish (waiting up to
     * {@code timeout}, then interrupting their sends; their outcomes are still marked, so no row
     * stays leased unless the database cannot be reached). Idempotent.
     */
    public void stop(Duration timeout) {
        loop.stop(timeout);
    }

    /** Stops the loop, waiting up to 30 s for the round in progress. */
    @Override
    public void close() {
        stop(Duration.ofSeconds(30));
    }

    /** Whether the loop is running. */
    public boolean isRunning() {
        return loop.isRunning();
    }

    /** The table this dispatcher reads. */
    public OutboxTable table() {
        return config.table();
    }

    /**
     * Builds an {@link OutboxDispatcher}. Each setter checks its own value; {@link #build()} checks
     * the rules between values.
     */
    public static final class Builder {

        private final OutboxTable table;
        private final OutboxPublisher publisher;
        private int batchSize = DEFAULT_BATCH_SIZE;
        private Duration lease = DEFAULT_LEASE;
        private Duration sendTimeout = DEFAULT_SEND_TIMEOUT;
        private int maxAttempts = DEFAULT_MAX_ATTEMPTS;
        private OutboxBackoff backoff = OutboxBackoff.DEFAULT;
        private TopicSet orderedTopics = TopicSet.ALL;
        private TopicSet shadowTopics = TopicSet.NONE;
        private @Nullable Instant cutoff;
        private Duration minPollInterval = DEFAULT_MIN_POLL_INTERVAL;
        private Duration maxPollInterval = DEFAULT_MAX_POLL_INTERVAL;
        private DoubleSupplier jitter = () -> ThreadLocalRandom.current().nextDouble();
        private MeterRegistry meterRegistry = new CompositeMeterRegistry();
        private int pipelineDepth = DEFAULT_PIPELINE_DEPTH;
        private Duration pollDelay = Duration.ZERO;
        private Duration statisticsCheckInterval = DEFAULT_STATISTICS_CHECK_INTERVAL;

        private Builder(OutboxTable table, OutboxPublisher publisher) {
            this.table = Objects.requireNonNull(table, "table");
            this.publisher = Objects.requireNonNull(publisher, "publisher");
        }

        /** Rows per claim (1 to 10,000); {@value #DEFAULT_BATCH_SIZE} by default. */
        public Builder batchSize(int batchSize) {
            if (batchSize < 1 || batchSize > 10_000) {
                throw new IllegalArgumentException(
                        "The outbox batch size must be between 1 and 10000, was " + batchSize);
            }
            this.batchSize = batchSize;
            return this;
        }

        /**
         * How long a claim keeps other dispatchers off its rows, counted by the database's clock;
         * at least twice the {@linkplain #sendTimeout send timeout}. {@link #DEFAULT_LEASE} by default.
         */
        public Builder lease(Duration lease) {
            this.lease = positive("lease", lease);
            return this;
        }

        /**
         * The bound on sending one batch, counted from the start of its claim: the publisher gets
         * what is left of it ({@link OutboxPublisher#publish(List, Duration)}) and is interrupted
         * if it has not returned shortly after; rows without an acknowledgement by then count a
         * failed attempt (and are parked past {@link #maxAttempts}). At most half the lease, so
         * that the rest of the lease covers the marks and their retries.
         * {@link #DEFAULT_SEND_TIMEOUT} by default.
         */
        public Builder sendTimeout(Duration sendTimeout) {
            this.sendTimeout = positive("send timeout", sendTimeout);
            return this;
        }

        /** Failed sends after which a row is parked (at least 1). */
        public Builder maxAttempts(int maxAttempts) {
            if (maxAttempts < 1) {
                throw new IllegalArgumentException("The outbox max attempts must be at least 1, was " + maxAttempts);
            }
            this.maxAttempts = maxAttempts;
            return this;
        }

        public Builder backoff(OutboxBackoff backoff) {
            this.backoff = Objects.requireNonNull(backoff, "backoff");
            return this;
        }

        /**
         * Topics whose rows are sent strictly in order per aggregate; {@value #ALL_TOPICS} (the
         * default) for all, an empty collection for none.
         */
        public Builder orderedTopics(Collection<String> topics) {
            this.orderedTopics = TopicSet.of(topics);
            return this;
        }

        /** Topics in shadow mode: their rows are marked dispatched without being sent; {@value #ALL_TOPICS} for all. */
        public Builder shadowTopics(Collection<String> topics) {
            this.shadowTopics = TopicSet.of(topics);
            return this;
        }

        /** Shadow mode for every topic (or none). */
        public Builder shadowMode(boolean enabled) {
            this.shadowTopics = enabled ? TopicSet.ALL : TopicSet.NONE;
            return this;
        }

        /** Rows created before {@code cutoff} are marked dispatched without being sent; {@code null}: none. */
        public Builder cutoff(@Nullable Instant cutoff) {
            this.cutoff = cutoff;
            return this;
        }

        /** The first wait after an empty round (and after a wake-up). */
        public Builder minPollInterval(Duration interval) {
            this.minPollInterval = positive("minimum poll interval", interval);
            return this;
        }

        /** The longest wait between polls of an idle outbox. */
        public Builder maxPollInterval(Duration interval) {
            this.maxPollInterval = positive("maximum poll interval", interval);
            return this;
        }

        /**
         * How many batches the loop started by {@link #start()} keeps claimed and not yet marked
         * (1 to 16); {@value #DEFAULT_PIPELINE_DEPTH} by default. With more than 1 the loop claims
         * the next batch while earlier ones await their acknowledgements, each sent and marked on
         * a sender thread of its own; 1 claims, sends and marks one batch after the other on the
         * loop's thread. Every batch keeps its own claim token, lease and send deadline; ordered
         * topics stay in order per aggregate (a row is claimed only when every earlier row of its
         * aggregate is marked dispatched). It needs up to {@code depth + 1} database connections.
         * {@link #dispatchOnce()} is not pipelined.
         */
        public Builder pipelineDepth(int pipelineDepth) {
            if (pipelineDepth < 1 || pipelineDepth > 16) {
                throw new IllegalArgumentException(
                        "The outbox pipeline depth must be between 1 and 16, was " + pipelineDepth);
            }
            this.pipelineDepth = pipelineDepth;
            return this;
        }

        /**
         * How long a row must have been due before a polling round ({@link #dispatchOnce()}, the
         * loop of {@link #start()}) claims it; zero (the default) claims rows as soon as they are
         * due. {@link #dispatchAmong} is not delayed. With the CDC module, which sends rows as the
         * database's log names them, a few seconds make polling the safety net it is meant to be:
         * it takes what the log's path left (failed, delayed, written while no engine streamed)
         * instead of racing it for every row.
         */
        public Builder pollDelay(Duration pollDelay) {
            Objects.requireNonNull(pollDelay, "pollDelay");
            if (pollDelay.isNegative()) {
                throw new IllegalArgumentException("The outbox poll delay must not be negative, was " + pollDelay);
            }
            this.pollDelay = pollDelay;
            return this;
        }

        /**
         * How often, at most, the dispatcher checks after a claim that took a full batch whether the
         * database's planner statistics of the outbox count fewer pending rows than that claim
         * took, and refreshes them if so ({@code ANALYZE}; PostgreSQL, where statistics taken
         * while every row was dispatched make each claim read every pending row); zero never
         * checks. 10 s by default.
         */
        public Builder statisticsCheckInterval(Duration statisticsCheckInterval) {
            Objects.requireNonNull(statisticsCheckInterval, "statisticsCheckInterval");
            if (statisticsCheckInterval.isNegative()) {
                throw new IllegalArgumentException(
                        "The outbox statistics check interval must not be negative, was " + statisticsCheckInterval);
            }
            this.statisticsCheckInterval = statisticsCheckInterval;
            return this;
        }

        /** Where the backoff's jitter comes from (numbers in [0, 1)); random by default. */
        public Builder jitter(DoubleSupplier jitter) {
            this.jitter = Objects.requireNonNull(jitter, "jitter");
            return this;
        }

        /** Where metrics go; none by default. */
        public Builder meterRegistry(MeterRegistry meterRegistry) {
            this.meterRegistry = Objects.requireNonNull(meterRegistry, "meterRegistry");
            return this;
        }

        private static Duration positive(String what, Duration value) {
            Objects.requireNonNull(value, what);
            if (value.isNegative() || value.isZero()) {
                throw new IllegalArgumentException("The outbox " + what + " must be positive, was " + value);
            }
            return value;
        }

        /** The settings, checked as by {@link #build()}. */
        DispatcherConfig config() {
            return new DispatcherConfig(
                    table,
                    publisher,
                    batchSize,
                    lease,
                    sendTimeout,
                    maxAttempts,
                    backoff,
                    orderedTopics,
                    shadowTopics,
                    cutoff,
                    minPollInterval,
                    maxPollInterval,
                    jitter,
                    meterRegistry,
                    pipelineDepth,
                    pollDelay,
                    statisticsCheckInterval);
        }

        /**
         * Builds the dispatcher, checking its settings.
         *
         * @throws IllegalArgumentException if the minimum poll interval exceeds the maximum, or the
         *     send timeout is more than half the lease
         */
        public OutboxDispatcher build() {
            return new OutboxDispatcher(config());
        }
    }
}
