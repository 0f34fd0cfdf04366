package io.sumi.outbox;

import io.sumi.jdbc.internal.ClaimTokens;
import io.sumi.jdbc.internal.ErrorSummaries;
import io.sumi.jdbc.internal.TransientSqlErrors;
import io.sumi.outbox.internal.Jdbc;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.DoubleSupplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.dao.DataAccessException;
import org.springframework.dao.RecoverableDataAccessException;
import org.springframework.dao.TransientDataAccessException;

/**
 * One dispatch round, top to bottom: claim → {@link #classify classify} → publish (bounded by
 * the {@link SendDeadline}) → {@link #settle settle} → mark (retried while the lease is ours) →
 * metrics. No thread of its own and no state between rounds: {@link DispatchLoop} (or a scheduler
 * of the user's, through {@link OutboxDispatcher#dispatchOnce()}) decides when it runs. The rules
 * it keeps are stated on {@link OutboxDispatcher} and in docs/outbox-semantics.md.
 *
 * <p>{@link #classify} and {@link #settle} touch neither the database nor the publisher: they are
 * what to test when a rule of the round changes.
 *
 * <p>Thread-safe: rounds may run on several threads at once (each claims its own rows).
 */
final class DispatchRound {

    private static final Logger log = LoggerFactory.getLogger(OutboxDispatcher.class);

    private static final long MARK_RETRY_INITIAL_MILLIS = 100;

    private static final long MARK_RETRY_MAX_MILLIS = 1000;

    private final OutboxTable table;
    private final OutboxDialect dialect;
    private final OutboxDialect.Claim claim;
    private final OutboxDialect.Ordering ordering;
    private volatile OutboxDialect.@Nullable ClaimAmong claimAmong;
    private final SendDeadline sendDeadline;
    private final Clock clock;
    private final int batchSize;
    private final Duration lease;
    private final long sendTimeoutNanos;
    private final int maxAttempts;
    private final OutboxBackoff backoff;
    private final TopicSet shadowTopics;
    private final @Nullable Instant cutoff;
    private final DoubleSupplier jitter;
    private final DispatcherMetrics metrics;
    private final Duration pollDelay;
    private final ClaimTokens tokens = new ClaimTokens();
    private final StatisticsCheck statistics;

    DispatchRound(DispatcherConfig config) {
        this.table = config.table();
        this.dialect = table.dialect();
        this.clock = table.clock();
        this.sendDeadline = new SendDeadline(config.publisher(), config.sendTimeout(), config.deadlineGrace());
        this.batchSize = config.batchSize();
        this.lease = config.lease();
        this.sendTimeoutNanos = config.sendTimeout().toNanos();
        this.maxAttempts = config.maxAttempts();
        this.backoff = config.backoff();
        this.shadowTopics = config.shadowTopics();
        this.cutoff = config.cutoff();
        this.jitter = config.jitter();
        this.metrics = new DispatcherMetrics(config.meterRegistry());
        this.pollDelay = config.pollDelay();
        this.ordering = new OutboxDialect.Ordering(
                config.orderedTopics().all(), config.orderedTopics().topics());
        this.claim = dialect.claim(ordering);
        this.statistics = new StatisticsCheck(table, config.statisticsCheckInterval(), batchSize, metrics);
    }

    int batchSize() {
        return batchSize;
    }

    /**
     * The claimed rows by what happens to them: sent, or recorded as dispatched without being sent
     * (shadow topics; created before the cutoff, which wins over shadow).
     */
    record Batch(
            List<OutboxRecord> claimed,
            List<OutboxRecord> toSend,
            List<OutboxRecord> shadow,
            List<OutboxRecord> skipped) {}

    /**
     * What one round writes back (each list in claim order) and what it reports.
     *
     * @param sent ids to mark {@link DispatchOutcome#SENT}
     * @param shadowed ids to mark {@link DispatchOutcome#SHADOW}
     * @param skipped ids to mark {@link DispatchOutcome#SKIPPED}
     * @param failures rows to mark failed: scheduled again after their back-off, or parked
     * @param parked the ids among {@code failures} that are parked
     * @param result the counts
     */
    record Settlement(
            List<Long> sent,
            List<Long> shadowed,
            List<Long> skipped,
            List<OutboxDialect.Failure> failures,
            List<Long> parked,
            DispatchResult result) {

        /** A round that claimed nothing. */
        static final Settlement NOTHING =
                new Settlement(List.of(), List.of(), List.of(), List.of(), List.of(), DispatchResult.NOTHING);

        /**
         * The wake-up hint for a loop: a round that claimed rows is followed at once by the next
         * (more rows, or the next rows of an aggregate, may be due); after an empty one the loop
         * may wait.
         */
        boolean goOnAtOnce() {
            return result.claimed() > 0;
        }
    }

    /**
     * A claimed batch between its claim and its marks: the claim token that fences the marks, when
     * the claim began (the send deadline and the lease are counted from it) and the rows.
     */
    record Claimed(long token, long claimedAt, List<OutboxRecord> rows) {

        static final Claimed NOTHING = new Claimed(0, 0, List.of());

        boolean isEmpty() {
            return rows.isEmpty();
        }
    }

    /**
     * Runs one round: claim, send, mark.
     *
     * @throws DataAccessException see {@link OutboxDispatcher#dispatchOnce()}
     */
    Settlement run() {
        Claimed claimed = claim();
        return claimed.isEmpty() ? Settlement.NOTHING : complete(claimed);
    }

    /**
     * The first step of a round: claims up to {@code batchSize} due rows in one committed statement.
     * The send must start at once ({@link #complete}): its deadline runs from this call.
     *
     * @throws DataAccessException if the claim fails (nothing is claimed)
     */
    Claimed claim() {
        // Due times only: a poll delay holds rows back from polling, never from dispatchAmong.
        statistics.runIfDue();
        Instant now = clock.instant().minus(pollDelay);
        long token = tokens.next();
        // The database starts the lease after this moment, so the lease is surely ours until
        // claimedAt + lease (measured on this JVM's monotonic clock, never compared with another JVM's).
        long claimedAt = System.nanoTime();
        List<OutboxRecord> rows;
        try {
            rows = Jdbc.inOwnTransaction(
                    table.dataSource(), "claim", connection -> claim.claim(connection, token, now, lease, batchSize));
        } catch (RuntimeException ex) {
            metrics.poll("error");
            throw ex;
        }
        if (rows.isEmpty()) {
            metrics.poll("empty");
            return Claimed.NOTHING;
        }
        metrics.poll("rows");
        statistics.claimed(rows.size());
        return new Claimed(token, claimedAt, rows);
    }

    /**
     * Like {@link #claim()}, among {@code ids} only (at most {@code batchSize} of them): the rows of
     * {@code ids} a claim could take now, under the same rules. Counts no poll.
     *
     * @throws DataAccessException if the claim fails (nothing is claimed)
     * @throws UnsupportedOperationException if the database has no such claim (PostgreSQL only)
     */
    Claimed claimAmong(List<Long> ids) {
        OutboxDialect.ClaimAmong among = claimAmong;
        if (among == null) {
            among = dialect.claimAmong(ordering);
            claimAmong = among;
        }
        OutboxDialect.ClaimAmong prepared = among;
        statistics.runIfDue();
        Instant now = clock.instant();
        long token = tokens.next();
        long claimedAt = System.nanoTime();
        List<OutboxRecord> rows = Jdbc.inOwnTransaction(
                table.dataSource(), "claim", connection -> prepared.claim(connection, token, now, lease, ids));
        statistics.claimed(rows.size());
        return rows.isEmpty() ? Claimed.NOTHING : new Claimed(token, claimedAt, rows);
    }

    /**
     * The rest of a round for a non-empty {@link #claim}: send (bounded by the deadline counted
     * from the claim), settle, mark (retried while the lease is ours), metrics. Batches of one
     * dispatcher may complete on several threads at once: each is fenced by its own claim token.
     *
     * @throws DataAccessException if the marks still fail when the lease is about to end (the rows
     *     stay leased and are sent again when it ends)
     */
    Settlement complete(Claimed claimed) {
        List<OutboxRecord> rows = claimed.rows();
        long token = claimed.token();
        long leaseEnd = claimed.claimedAt() + lease.toNanos();
        Batch batch = classify(rows, cutoff, shadowTopics);
        List<OutboxRecord> toSend = batch.toSend();
        PublishResult published = toSend.isEmpty()
                ? PublishResult.allSent()
                : sendDeadline.publish(toSend, claimed.claimedAt() + sendTimeoutNanos);
        Instant ackedAt = clock.instant();
        if (System.nanoTime() - leaseEnd > 0) {
            log.warn(
                    "Sending an outbox batch of {} rows took longer than the lease ({}): another dispatcher may have sent"
                            + " them too (was this process stalled?).",
                    toSend.size(),
                    lease);
        }

        Settlement settlement = settle(batch, published, ackedAt);
        // A stop interrupts a send in progress: record its outcome all the same (else its rows would
        // stay leased until the lease ends), then keep the interrupt for the caller.
        boolean interrupted = Thread.interrupted();
        try {
            markAll(settlement, token, ackedAt, rows.size(), leaseEnd);
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
        recordMetrics(batch, published, ackedAt);
        return settlement;
    }

    /** Splits the claimed rows: created before {@code cutoff} → skipped; else on a shadow topic → shadow; else sent. */
    static Batch classify(List<OutboxRecord> rows, @Nullable Instant cutoff, TopicSet shadowTopics) {
        List<OutboxRecord> toSend = new ArrayList<>(rows.size());
        List<OutboxRecord> skipped = new ArrayList<>();
        List<OutboxRecord> shadow = new ArrayList<>();
        for (OutboxRecord row : rows) {
            if (cutoff != null && row.createdAt().isBefore(cutoff)) {
                skipped.add(row);
            } else if (shadowTopics.contains(row.topic())) {
                shadow.add(row);
            } else {
                toSend.add(row);
            }
        }
        return new Batch(rows, toSend, shadow, skipped);
    }

    /**
     * Decides what to record for {@code batch} after the publisher reported {@code published} at
     * {@code ackedAt}: acknowledged rows are sent; a failed row counts an attempt and is due again
     * after its back-off ({@code ackedAt} + {@link OutboxBackoff#delay}), or is parked
     * ({@code parked_at = ackedAt}, due time unchanged) when that was its last allowed attempt.
     * Logs each parked row (error) and the round's failures (one warning).
     */
    Settlement settle(Batch batch, PublishResult published, Instant ackedAt) {
        List<OutboxRecord> toSend = batch.toSend();
        List<Long> sent = new ArrayList<>(toSend.size());
        List<OutboxDialect.Failure> failures = new ArrayList<>();
        List<Long> parked = List.of();
        for (OutboxRecord row : toSend) {
            Throwable failure = published.failures().get(row.id());
            if (failure == null) {
                sent.add(row.id());
                continue;
            }
            int failed = row.attempts() + 1;
            String error = summary(failure);
            if (failed >= maxAttempts) {
                if (parked.isEmpty()) {
                    parked = new ArrayList<>();
                }
                parked.add(row.id());
                failures.add(new OutboxDialect.Failure(row.id(), error, row.availableAt(), ackedAt));
                log.error(
                        "Outbox row {} (topic {}, aggregate {}) is parked after {} failed attempts; last error: {}."
                                + " Re-drive it with OutboxTable.redrive({}) once the cause is fixed.",
                        row.id(),
                        row.topic(),
                        row.aggregateId(),
                        failed,
                        error,
                        row.id());
            } else {
                Instant next = ackedAt.plus(backoff.delay(failed, jitter.getAsDouble()));
                failures.add(new OutboxDialect.Failure(row.id(), error, next, null));
                log.debug(
                        "Outbox row {} (topic {}) failed attempt {}: {}; next attempt at {}",
                        row.id(),
                        row.topic(),
                        failed,
                        error,
                        next);
            }
        }
        if (!failures.isEmpty()) {
            OutboxDialect.Failure first = failures.get(0);
            log.warn(
                    "Sending {} of {} outbox rows failed ({} parked); they are retried with backoff. First: row {}: {}",
                    failures.size(),
                    toSend.size(),
                    parked.size(),
                    first.id(),
                    first.error());
        }
        List<Long> shadowed = batch.shadow().stream().map(OutboxRecord::id).toList();
        List<Long> skipped = batch.skipped().stream().map(OutboxRecord::id).toList();
        DispatchResult result = new DispatchResult(
                batch.claimed().size(),
                sent.size(),
                shadowed.size(),
                skipped.size(),
                failures.size() - parked.size(),
                parked.size());
        return new Settlement(sent, shadowed, skipped, failures, parked, result);
    }

    /**
     * Records the outcome of the round: all marks in one transaction, the usual case. If the
     * database refuses that transaction for a reason other than the connection or other
     * transactions' locks (a data error: an error text the column cannot hold even after
     * {@link ErrorSummaries#sanitize}, a constraint of the user's), one row must not hold back the
     * others, so the marks are recorded {@link #markOneByOne one by one}.
     */
    private void markAll(Settlement settlement, long token, Instant ackedAt, int rows, long leaseEnd) {
        try {
            mark(rows, leaseEnd, connection -> {
                dialect.markDispatched(connection, token, settlement.sent(), ackedAt, DispatchOutcome.SENT);
                dialect.markDispatched(connection, token, settlement.shadowed(), ackedAt, DispatchOutcome.SHADOW);
                dialect.markDispatched(connection, token, settlement.skipped(), ackedAt, DispatchOutcome.SKIPPED);
                return dialect.markFailed(connection, token, settlement.failures());
            });
        } catch (RuntimeException ex) {
            if (!refused(ex) || Thread.currentThread().isInterrupted()) {
                log.error(
                        "Could not record the outcome of {} outbox rows; rows that were sent will be sent again when"
                                + " their lease ends",
                        rows,
                        ex);
                throw ex;
            }
            log.warn(
                    "Could not record the outcome of {} outbox rows in one transaction ({}); recording them one by one",
                    rows,
                    summary(ex));
            try {
                markOneByOne(settlement, token, ackedAt, leaseEnd);
            } catch (RuntimeException lost) {
                log.error(
                        "Could not record the outcome of {} outbox rows one by one either; rows not marked are sent"
                                + " again when their lease ends",
                        rows,
                        lost);
                throw lost;
            }
        }
    }

    /**
     * The fallback of {@link #markAll}: the dispatched rows of each outcome together (their marks
     * hold no text), and, should that fail, each alone; then each failed row alone with its error
     * text, and should that fail, without it (logged). A row whose mark still fails is logged and
     * left leased: its lease ends and it is claimed again, while every other row keeps its mark.
     * Connection failures are retried as in {@link #mark} while the lease lasts; if they outlast
     * it, the exception propagates as from {@link #markAll}.
     */
    private void markOneByOne(Settlement settlement, long token, Instant ackedAt, long leaseEnd) {
        markDispatchedOneByOne(settlement.sent(), token, ackedAt, DispatchOutcome.SENT, leaseEnd);
        markDispatchedOneByOne(settlement.shadowed(), token, ackedAt, DispatchOutcome.SHADOW, leaseEnd);
        markDispatchedOneByOne(settlement.skipped(), token, ackedAt, DispatchOutcome.SKIPPED, leaseEnd);
        for (OutboxDialect.Failure failure : settlement.failures()) {
            try {
                mark(1, leaseEnd, connection -> dialect.markFailed(connection, token, List.of(failure)));
            } catch (RuntimeException ex) {
                if (!refused(ex)) {
                    throw ex;
                }
                OutboxDialect.Failure withoutText =
                        new OutboxDialect.Failure(failure.id(), null, failure.availableAt(), failure.parkedAt());
                try {
                    mark(1, leaseEnd, connection -> dialect.markFailed(connection, token, List.of(withoutText)));
                    log.warn(
                            "Outbox row {}: the database refused its error text ({}); the failed attempt is recorded"
                                    + " without it. The error was: {}",
                            failure.id(),
                            summary(ex),
                            failure.error());
                } catch (RuntimeException again) {
                    if (!refused(again)) {
                        throw again;
                    }
                    log.error(
                            "Could not record the failed send of outbox row {} ({}); it stays leased and is sent again"
                                    + " when its lease ends",
                            failure.id(),
                            summary(again),
                            again);
                }
            }
        }
    }

    private void markDispatchedOneByOne(
            List<Long> ids, long token, Instant ackedAt, DispatchOutcome outcome, long leaseEnd) {
        if (ids.size() > 1) {
            try {
                mark(
                        ids.size(),
                        leaseEnd,
                        connection -> dialect.markDispatched(connection, token, ids, ackedAt, outcome));
                return;
            } catch (RuntimeException ex) {
                if (!refused(ex)) {
                    throw ex;
                }
            }
        }
        for (Long id : ids) {
            try {
                mark(
                        1,
                        leaseEnd,
                        connection -> dialect.markDispatched(connection, token, List.of(id), ackedAt, outcome));
            } catch (RuntimeException ex) {
                if (!refused(ex)) {
                    throw ex;
                }
                log.error(
                        "Could not mark outbox row {} dispatched; it stays leased and is sent again when its lease ends",
                        id,
                        ex);
            }
        }
    }

    /**
     * Runs one transaction of marks. The marks are fenced by the claim token (and each is a
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
            } catch (RuntimeException ex) {
                if (!retryable(ex)
                        || leaseEnd - System.nanoTime() <= pause
                        || Thread.currentThread().isInterrupted()) {
                    // The caller logs: it may yet record the rows another way.
                    throw ex;
                }
                if (attempt == 1) {
                    log.warn(
                            "Could not record the outcome of {} outbox rows ({}); trying again while their lease lasts",
                            rows,
                            summary(ex));
                }
                try {
                    TimeUnit.NANOSECONDS.sleep(pause);
                } catch (InterruptedException interrupted) {
                    Thread.currentThread().interrupt();
                    throw ex;
                }
                pause = Math.min(pause * 2, TimeUnit.MILLISECONDS.toNanos(MARK_RETRY_MAX_MILLIS));
            }
        }
    }

    /** Whether a mark that failed with {@code ex} may succeed as it is, once the database is reachable or the locks are gone. */
    private static boolean retryable(RuntimeException ex) {
        return TransientSqlErrors.isConnectionFailure(ex)
                || TransientSqlErrors.isTransient(ex)
                || ex instanceof TransientDataAccessException
                || ex instanceof RecoverableDataAccessException;
    }

    /**
     * Whether the database refused a mark for what it holds ({@link ErrorSummaries#isRefusal}), so
     * that marking the rows one by one, or a row without its error text, may succeed.
     */
    private static boolean refused(RuntimeException ex) {
        return !retryable(ex) && ErrorSummaries.isRefusal(ex);
    }

    /** Counts the round's rows once their marks are committed. */
    private void recordMetrics(Batch batch, PublishResult published, Instant ackedAt) {
        for (OutboxRecord row : batch.toSend()) {
            if (published.sent(row.id())) {
                metrics.sent(row.topic(), Duration.between(row.createdAt(), ackedAt), row.attempts() + 1);
            } else {
                metrics.failed(row.topic());
                if (row.attempts() + 1 >= maxAttempts) {
                    metrics.parked(row.topic());
                }
            }
        }
        batch.shadow().forEach(row -> metrics.dispatched(row.topic(), DispatchOutcome.SHADOW, 1));
        batch.skipped().forEach(row -> metrics.dispatched(row.topic(), DispatchOutcome.SKIPPED, 1));
    }

    /**
     * The failure as stored in {@code last_error}: class, message and a cause the message omits,
     * {@linkplain ErrorSummaries#sanitize as every column holds it} (no NUL, no 4-byte characters, at
     * most 1,000 characters).
     */
    static String summary(Throwable failure) {
        String message = failure.getMessage();
        String text = failure.getClass().getName() + (message == null ? "" : ": " + message);
        Throwable cause = failure.getCause();
        if (cause != null
                && cause != failure
                && cause.getMessage() != null
                && (message == null || !message.contains(cause.getMessage()))) {
            text += " (cause: " + cause.getClass().getName() + ": " + cause.getMessage() + ")";
        }
        return ErrorSummaries.sanitize(text);
    }
}
