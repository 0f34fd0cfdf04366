package io.sumi.outbox;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import io.sumi.outbox.internal.Jdbc;
import io.sumi.outbox.internal.OutboxDialect;
import io.sumi.store.jdbc.internal.TransientSqlErrors;
import java.security.SecureRandom;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.DoubleSupplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.dao.DataAccessException;
import org.springframework.dao.RecoverableDataAccessException;
import org.springframework.dao.TransientDataAccessException;

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
 *   lease is surely still ours.</li>
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

    private static final Logger log = LoggerFactory.getLogger(OutboxDispatcher.class);

    private static final int ERROR_LENGTH = 1000;

    private static final long MARK_RETRY_INITIAL_MILLIS = 100;

    private static final long MARK_RETRY_MAX_MILLIS = 1000;

    /** The longest wait past the deadline for a publisher to return by itself before it is interrupted. */
    private static final Duration MAX_DEADLINE_GRACE = Duration.ofSeconds(1);

    private static final AtomicInteger THREADS = new AtomicInteger();

    private final OutboxTable table;
    private final OutboxDialect dialect;
    private final OutboxDialect.Claim claim;
    private final OutboxPublisher publisher;
    private final Clock clock;
    private final int batchSize;
    private final Duration lease;
    private final Duration sendTimeout;
    private final Duration deadlineGrace;
    private final int maxAttempts;
    private final OutboxBackoff backoff;
    private final TopicSet orderedTopics;
    private final TopicSet shadowTopics;
    private final @Nullable Instant cutoff;
    private final Duration minPollInterval;
    private final Duration maxPollInterval;
    private final DoubleSupplier jitter;
    private final DispatcherMetrics metrics;
    private final SecureRandom tokens = new SecureRandom();

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition wakeUpCondition = lock.newCondition();
    private boolean wakeUpRequested;
    private volatile boolean running;
    private @Nullable Thread thread;
    private int consecutiveErrors;

    private OutboxDispatcher(Builder builder) {
        this.table = builder.table;
        this.dialect = table.dialect();
        this.publisher = builder.publisher;
        this.clock = table.clock();
        this.batchSize = builder.batchSize;
        this.lease = builder.lease;
        this.sendTimeout = builder.sendTimeout;
        Duration tenth = sendTimeout.dividedBy(10);
        this.deadlineGrace = tenth.compareTo(MAX_DEADLINE_GRACE) < 0 ? tenth : MAX_DEADLINE_GRACE;
        this.maxAttempts = builder.maxAttempts;
        this.backoff = builder.backoff;
        this.orderedTopics = builder.orderedTopics;
        this.shadowTopics = builder.shadowTopics;
        this.cutoff = builder.cutoff;
        this.minPollInterval = builder.minPollInterval;
        this.maxPollInterval = builder.maxPollInterval;
        this.jitter = builder.jitter;
        this.metrics = new DispatcherMetrics(builder.meterRegistry);
        this.claim = dialect.claim(new OutboxDialect.Ordering(orderedTopics.all(), orderedTopics.topics()));
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
        Instant now = clock.instant();
        long token = newToken();
        // The database starts the lease after this moment, so the lease is surely ours until
        // leaseEnd (measured on this JVM's monotonic clock, never compared with another JVM's).
        long claimedAt = System.nanoTime();
        long leaseEnd = claimedAt + lease.toNanos();
        List<OutboxRecord> rows;
        try {
            rows = Jdbc.inOwnTransaction(table.dataSource(), "claim",
                    connection -> claim.claim(connection, token, now, lease, batchSize));
        }
        catch (RuntimeException ex) {
            metrics.poll("error");
            throw ex;
        }
        if (rows.isEmpty()) {
            metrics.poll("empty");
            return DispatchResult.NOTHING;
        }
        metrics.poll("rows");

        List<OutboxRecord> toSend = new ArrayList<>(rows.size());
        List<OutboxRecord> skippedRows = new ArrayList<>();
        List<OutboxRecord> shadowRows = new ArrayList<>();
        for (OutboxRecord row : rows) {
            if (cutoff != null && row.createdAt().isBefore(cutoff)) {
                skippedRows.add(row);
            }
            else if (shadowTopics.contains(row.topic())) {
                shadowRows.add(row);
            }
            else {
                toSend.add(row);
            }
        }

        PublishResult result = toSend.isEmpty() ? PublishResult.allSent() : publish(toSend, claimedAt + sendTimeout.toNanos());
        Instant ackedAt = clock.instant();
        if (System.nanoTime() - leaseEnd > 0) {
            log.warn("Sending an outbox batch of {} rows took longer than the lease ({}): another dispatcher may have sent"
                    + " them too (was this process stalled?).", toSend.size(), lease);
        }

        List<Long> skipped = skippedRows.stream().map(OutboxRecord::id).toList();
        List<Long> shadowed = shadowRows.stream().map(OutboxRecord::id).toList();
        List<Long> sent = new ArrayList<>(toSend.size());
        List<OutboxDialect.Failure> failures = new ArrayList<>();
        int parked = 0;
        for (OutboxRecord row : toSend) {
            Throwable failure = result.failures().get(row.id());
            if (failure == null) {
                sent.add(row.id());
                continue;
            }
            int failed = row.attempts() + 1;
            String error = summary(failure);
            if (failed >= maxAttempts) {
                parked++;
                failures.add(new OutboxDialect.Failure(row.id(), error, row.availableAt(), ackedAt));
                log.error("Outbox row {} (topic {}, aggregate {}) is parked after {} failed attempts; last error: {}."
                        + " Re-drive it with OutboxTable.redrive({}) once the cause is fixed.",
                        row.id(), row.topic(), row.aggregateId(), failed, error, row.id());
            }
            else {
                Instant next = ackedAt.plus(backoff.delay(failed, jitter.getAsDouble()));
                failures.add(new OutboxDialect.Failure(row.id(), error, next, null));
                log.debug("Outbox row {} (topic {}) failed attempt {}: {}; next attempt at {}", row.id(), row.topic(), failed,
                        error, next);
            }
        }
        if (!failures.isEmpty()) {
            OutboxDialect.Failure first = failures.get(0);
            log.warn("Sending {} of {} outbox rows failed ({} parked); they are retried with backoff. First: row {}: {}",
                    failures.size(), toSend.size(), parked, first.id(), first.error());
        }

        mark(rows.size(), leaseEnd, connection -> {
            dialect.markDispatched(connection, token, sent, ackedAt, DispatchOutcome.SENT);
            dialect.markDispatched(connection, token, shadowed, ackedAt, DispatchOutcome.SHADOW);
            dialect.markDispatched(connection, token, skipped, ackedAt, DispatchOutcome.SKIPPED);
            return dialect.markFailed(connection, token, failures);
        });

        for (OutboxRecord row : toSend) {
            if (result.sent(row.id())) {
                metrics.sent(row.topic(), Duration.between(row.createdAt(), ackedAt), row.attempts() + 1);
            }
            else {
                metrics.failed(row.topic());
                if (row.attempts() + 1 >= maxAttempts) {
                    metrics.parked(row.topic());
                }
            }
        }
        shadowRows.forEach(row -> metrics.dispatched(row.topic(), DispatchOutcome.SHADOW, 1));
        skippedRows.forEach(row -> metrics.dispatched(row.topic(), DispatchOutcome.SKIPPED, 1));
        return new DispatchResult(rows.size(), sent.size(), shadowed.size(), skipped.size(), failures.size() - parked, parked);
    }

    /**
     * Records the outcome of the round. The marks are fenced by the claim token (and each is a
     * no-op when run twice), so when the database cannot be reached they are tried again, with a
     * back-off of {@value #MARK_RETRY_INITIAL_MILLIS} ms doubling up to {@value #MARK_RETRY_MAX_MILLIS}
     * ms, for as long as the lease is surely ours: a short database outage then costs seconds
     * instead of the rest of the lease (and a second send of every row of the batch).
     */
    private void mark(int rows, long leaseEnd, Jdbc.Work<?> marks) {
        long pause = TimeUnit.MILLISECONDS.toNanos(MARK_RETRY_INITIAL_MILLIS);
        for (int attempt = 1; ; attempt++) {
            try {
                Jdbc.inOwnTransaction(table.dataSource(), "mark", marks);
                if (attempt > 1) {
                    log.info("Recorded the outcome of {} outbox rows at attempt {}", rows, attempt);
                }
                return;
            }
            catch (RuntimeException ex) {
                boolean retryable = TransientSqlErrors.isConnectionFailure(ex) || TransientSqlErrors.isTransient(ex)
                        || ex instanceof TransientDataAccessException || ex instanceof RecoverableDataAccessException;
                if (!retryable || leaseEnd - System.nanoTime() <= pause || Thread.currentThread().isInterrupted()) {
                    log.error("Could not record the outcome of {} outbox rows; rows that were sent will be sent again when"
                            + " their lease ends", rows, ex);
                    throw ex;
                }
                if (attempt == 1) {
                    log.warn("Could not record the outcome of {} outbox rows ({}); trying again while their lease lasts",
                            rows, summary(ex));
                }
                try {
                    TimeUnit.NANOSECONDS.sleep(pause);
                }
                catch (InterruptedException interrupted) {
                    Thread.currentThread().interrupt();
                    throw ex;
                }
                pause = Math.min(pause * 2, TimeUnit.MILLISECONDS.toNanos(MARK_RETRY_MAX_MILLIS));
            }
        }
    }

    /**
     * Hands the batch to the publisher with what is left until {@code deadline} (a
     * {@link System#nanoTime()} value). If the publisher has not returned shortly after the
     * deadline, this thread is interrupted (see {@link OutboxPublisher}); the interrupt is cleared
     * again before the marks run.
     */
    private PublishResult publish(List<OutboxRecord> records, long deadline) {
        List<OutboxRecord> batch = List.copyOf(records);
        long left = deadline - System.nanoTime();
        if (left <= 0) {
            // The claim itself took the whole send timeout: send nothing, count an attempt.
            return allFailed(records, new java.util.concurrent.TimeoutException(
                    "Not sent: the claim took longer than the send timeout (" + sendTimeout + ")"));
        }
        DeadlineInterrupt interrupt = new DeadlineInterrupt(Thread.currentThread());
        java.util.concurrent.ScheduledFuture<?> timer = DeadlineInterrupt.TIMER.schedule(interrupt,
                left + deadlineGrace.toNanos(), TimeUnit.NANOSECONDS);
        try {
            return publisher.publish(batch, Duration.ofNanos(left));
        }
        catch (RuntimeException ex) {
            return allFailed(records, ex);
        }
        finally {
            timer.cancel(false);
            if (interrupt.disarm()) {
                // Our own interrupt, not a request to stop: clear it so that the marks can run.
                Thread.interrupted();
                log.warn("The outbox publisher had not returned {} after the batch's send timeout ({}); it was"
                        + " interrupted", deadlineGrace, sendTimeout);
            }
        }
    }

    private static PublishResult allFailed(List<OutboxRecord> records, Throwable failure) {
        Map<Long, Throwable> all = new LinkedHashMap<>();
        for (OutboxRecord record : records) {
            all.put(record.id(), failure);
        }
        return PublishResult.failed(all);
    }

    /**
     * Interrupts a dispatching thread whose publisher outlives the batch's deadline, unless it has
     * been disarmed first. Race: the timer may fire while the publisher returns; both sides hold
     * the monitor, so the thread is interrupted only while it is still publishing, and the
     * dispatcher knows whether it was.
     */
    private static final class DeadlineInterrupt implements Runnable {

        static final java.util.concurrent.ScheduledThreadPoolExecutor TIMER = timer();

        private final Thread thread;
        private boolean armed = true;
        private boolean fired;

        DeadlineInterrupt(Thread thread) {
            this.thread = thread;
        }

        @Override
        public synchronized void run() {
            if (armed) {
                fired = true;
                thread.interrupt();
            }
        }

        /** Disarms; returns whether it fired. */
        synchronized boolean disarm() {
            armed = false;
            return fired;
        }

        private static java.util.concurrent.ScheduledThreadPoolExecutor timer() {
            java.util.concurrent.ScheduledThreadPoolExecutor timer = new java.util.concurrent.ScheduledThreadPoolExecutor(1, runnable -> {
                Thread thread = new Thread(runnable, "sumi-outbox-deadline");
                thread.setDaemon(true);
                return thread;
            });
            timer.setRemoveOnCancelPolicy(true);
            return timer;
        }
    }

    private long newToken() {
        long token;
        do {
            token = tokens.nextLong();
        }
        while (token == 0);
        return token;
    }

    static String summary(Throwable failure) {
        String message = failure.getMessage();
        String text = failure.getClass().getName() + (message == null ? "" : ": " + message);
        Throwable cause = failure.getCause();
        if (cause != null && cause != failure && cause.getMessage() != null && (message == null || !message.contains(cause.getMessage()))) {
            text += " (cause: " + cause.getClass().getName() + ": " + cause.getMessage() + ")";
        }
        return text.length() <= ERROR_LENGTH ? text : text.substring(0, ERROR_LENGTH);
    }

    // ---------------------------------------------------------------- the loop

    /**
     * Ends the current wait of the loop at once (a no-op if it is not waiting; the next wait is
     * then skipped). Non-blocking; call it after a transaction that appended rows commits.
     */
    public void wakeUp() {
        lock.lock();
        try {
            wakeUpRequested = true;
            wakeUpCondition.signalAll();
        }
        finally {
            lock.unlock();
        }
    }

    /** Starts the dispatch loop on a daemon thread of its own. Idempotent. */
    public synchronized void start() {
        if (running) {
            return;
        }
        running = true;
        Thread loop = new Thread(this::loop, "sumi-outbox-dispatcher-" + THREADS.incrementAndGet());
        loop.setDaemon(true);
        this.thread = loop;
        loop.start();
        log.info("Outbox dispatcher started on table {} (batch {}, ordered: {}, shadow: {}{})", table.tableName(), batchSize,
                orderedTopics, shadowTopics, cutoff == null ? "" : ", cutoff " + cutoff);
    }

    /**
     * Stops the loop, letting the round in progress finish (waiting up to {@code timeout}, then
     * interrupting it). Idempotent.
     */
    public void stop(Duration timeout) {
        Thread loop;
        synchronized (this) {
            if (!running) {
                return;
            }
            running = false;
            loop = thread;
            thread = null;
        }
        wakeUp();
        if (loop != null && loop != Thread.currentThread()) {
            try {
                loop.join(timeout.toMillis());
                if (loop.isAlive()) {
                    loop.interrupt();
                    loop.join(1000);
                }
            }
            catch (InterruptedException ex) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Stops the loop, waiting up to 30 s for the round in progress. */
    @Override
    public void close() {
        stop(Duration.ofSeconds(30));
    }

    /** Whether the loop is running. */
    public boolean isRunning() {
        return running;
    }

    private void loop() {
        Duration interval = minPollInterval;
        while (running) {
            boolean foundRows;
            try {
                foundRows = dispatchOnce().claimed() > 0;
                if (consecutiveErrors > 0) {
                    log.info("The outbox dispatcher works again after {} failed round(s)", consecutiveErrors);
                }
                consecutiveErrors = 0;
            }
            catch (RuntimeException ex) {
                foundRows = false;
                consecutiveErrors++;
                if (consecutiveErrors == 1) {
                    log.warn("An outbox dispatch round failed; retrying with backoff", ex);
                }
                else {
                    log.warn("An outbox dispatch round failed again ({} in a row): {}", consecutiveErrors, summary(ex));
                }
            }
            if (foundRows || !running) {
                // Busy: go on at once, more rows (or the next rows of an aggregate) may be due.
                interval = minPollInterval;
                continue;
            }
            boolean woken = awaitWakeUp(interval);
            interval = woken ? minPollInterval : min(interval.multipliedBy(2), maxPollInterval);
        }
    }

    /** Waits up to {@code timeout} for {@link #wakeUp()}; returns whether it came. */
    private boolean awaitWakeUp(Duration timeout) {
        lock.lock();
        try {
            long nanos = timeout.toNanos();
            while (!wakeUpRequested && running && nanos > 0) {
                nanos = wakeUpCondition.awaitNanos(nanos);
            }
            boolean woken = wakeUpRequested;
            wakeUpRequested = false;
            return woken;
        }
        catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            running = false;
            return false;
        }
        finally {
            lock.unlock();
        }
    }

    private static Duration min(Duration a, Duration b) {
        return a.compareTo(b) <= 0 ? a : b;
    }

    /** The table this dispatcher reads. */
    public OutboxTable table() {
        return table;
    }

    /**
     * Builds an {@link OutboxDispatcher}.
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

        private Builder(OutboxTable table, OutboxPublisher publisher) {
            this.table = Objects.requireNonNull(table, "table");
            this.publisher = Objects.requireNonNull(publisher, "publisher");
        }

        /** Rows per claim (1 to 10,000); {@value #DEFAULT_BATCH_SIZE} by default. */
        public Builder batchSize(int batchSize) {
            if (batchSize < 1 || batchSize > 10_000) {
                throw new IllegalArgumentException("The outbox batch size must be between 1 and 10000, was " + batchSize);
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

        /**
         * @throws IllegalArgumentException if the minimum poll interval exceeds the maximum, or the
         *     send timeout is more than half the lease
         */
        public OutboxDispatcher build() {
            if (sendTimeout.multipliedBy(2).compareTo(lease) > 0) {
                throw new IllegalArgumentException("The outbox send timeout (" + sendTimeout + ") must be at most half the"
                        + " lease (" + lease + "): a batch may take the whole send timeout, and the rest of the lease is the"
                        + " margin that keeps other dispatchers from sending the same rows while this one records what it"
                        + " sent. Raise the lease (sumi.outbox.dispatcher.lease) or lower the send timeout"
                        + " (sumi.outbox.dispatcher.send-timeout).");
            }
            if (minPollInterval.compareTo(maxPollInterval) > 0) {
                throw new IllegalArgumentException("The outbox minimum poll interval (" + minPollInterval
                        + ") must not exceed the maximum (" + maxPollInterval + ")");
            }
            return new OutboxDispatcher(this);
        }
    }
}
