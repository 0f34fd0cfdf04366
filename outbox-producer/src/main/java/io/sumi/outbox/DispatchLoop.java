package io.sumi.outbox;

import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The threads that run an {@link OutboxDispatcher}'s rounds: back to back while they find rows;
 * after an empty (or failed) round it waits {@code minPollInterval}, doubling after each further
 * empty round up to {@code maxPollInterval}; {@link #wakeUp()} ends a wait at once and resets it to
 * the minimum. Owns the threads, the wake-ups and the lifecycle, nothing of a round.
 *
 * <h2>Pipelining</h2>
 * A round is a claim followed by its completion (send, wait for the acks, mark). With a depth of 1
 * both run on the loop's thread, one round after the other. With a depth {@code d > 1}, the loop's
 * thread only claims, and hands each claimed batch at once to one of {@code d} sender threads,
 * which send and mark it; the loop claims the next batch while earlier ones await their acks, as
 * long as fewer than {@code d} batches are claimed and not yet marked. A claim is made only when a
 * sender is free, so a claimed batch never waits in a queue: its send starts as soon as its claim
 * returns, as at depth 1 (the send deadline is counted from the claim). When a claim finds nothing,
 * or fewer rows than it could take (everything due is claimed), while batches are in flight, the
 * loop waits for one of them to complete (the rows it holds back, the next rows of its aggregates,
 * may then be due) or for a wake-up, without the idle back-off: a claim that would find nothing is
 * not cheap with ordered topics (it walks every held-back row).
 *
 * <p>Fewer heads than the pipeline holds. With ordered topics a claim can take at most one row per
 * aggregate (its head), so when the aggregates with pending rows are fewer than {@code depth}
 * batches hold, the batches in flight hold every head and the next claim walks the whole backlog to
 * find nothing: measured, 100,000 pending rows of 1,000 aggregates at depth 4 and batch 500 drained
 * at 4,600 rows/s against 23,500 at depth 2, every second claim such a walk. So a claim that finds
 * nothing while {@code k} batches are in flight sets a limit: no claim while {@code k} or more are
 * in flight, until rows are appended ({@link #wakeUp()}) or the limit ends
 * {@link #DEFAULT_CLAIM_LIMIT_RESET} later (the heads may have grown meanwhile: another
 * dispatcher's leases ended); a claim that then finds nothing again sets it again, so without
 * appends such a walk costs once a second at most instead of once a batch. The wake-up keeps the
 * pipelining of a steady flow of new rows, where a claim finds nothing only because the one before
 * it took the rows of the last wake-up.
 * Only how many batches are in flight changes; which rows a claim may take does not.
 *
 * <p>Stop: the loop claims nothing more and waits for the batches in flight to be marked; past the
 * timeout it interrupts the senders (a publisher gives up when interrupted: its rows count a failed
 * attempt, or stay leased until the lease ends if even the mark fails).
 *
 * <p>Thread-safe.
 *
 * @param <B> a claimed batch
 */
final class DispatchLoop<B> {

    private static final Logger log = LoggerFactory.getLogger(OutboxDispatcher.class);

    private static final AtomicInteger THREADS = new AtomicInteger();

    /** How long the limit set by a claim that found nothing lasts (see "Fewer heads than the pipeline holds"). */
    static final Duration DEFAULT_CLAIM_LIMIT_RESET = Duration.ofSeconds(1);

    /** How long a stop waits for the marks of the sends it interrupted. */
    private static final long MARK_AFTER_INTERRUPT_SECONDS = 5;

    /** One round in two steps: the claim (on the loop's thread) and its completion (send, mark). */
    interface Round<B> {

        /** Claims a batch; {@code null} when there was nothing to claim. */
        @Nullable
        B claim();

        /** Sends and marks a batch {@link #claim} returned. */
        void complete(B batch);

        /**
         * Whether the claim that returned {@code batch} may have left due rows behind (it took as
         * many as it could); {@code false} when it took fewer: everything due was claimed.
         */
        default boolean mayHaveLeftRows(B batch) {
            return true;
        }
    }

    private final Round<B> round;
    private final int depth;
    private final Duration minPollInterval;
    private final Duration maxPollInterval;
    private final long claimLimitResetNanos;

    private final ReentrantLock lock = new ReentrantLock();
    /** Signalled by wake-ups, by completed batches and by stop. */
    private final Condition changed = lock.newCondition();

    private boolean wakeUpRequested;
    /** Batches claimed and not yet completed (guarded by {@link #lock}). */
    private int inFlight;
    /** Batches completed since the start (guarded by {@link #lock}). */
    private long completed;
    /**
     * No claim while this many batches are in flight: {@link #depth}, or fewer after a claim found
     * nothing with batches in flight (guarded by {@link #lock}).
     */
    private int claimLimit;
    /** When {@link #claimLimit} was lowered ({@link System#nanoTime()}; guarded by {@link #lock}). */
    private long claimLimitSince;

    private volatile boolean running;
    private @Nullable Thread thread;
    private @Nullable ExecutorService senders;
    private int consecutiveErrors;

    /**
     * @param depth batches claimed and not yet marked at most (1: claim, send and mark one after
     *     the other on the loop's thread)
     */
    DispatchLoop(Round<B> round, int depth, Duration minPollInterval, Duration maxPollInterval) {
        this(round, depth, minPollInterval, maxPollInterval, DEFAULT_CLAIM_LIMIT_RESET);
    }

    /** @param claimLimitReset how long the limit set by a claim that found nothing lasts */
    DispatchLoop(
            Round<B> round, int depth, Duration minPollInterval, Duration maxPollInterval, Duration claimLimitReset) {
        if (depth < 1) {
            throw new IllegalArgumentException("The outbox pipeline depth must be at least 1, was " + depth);
        }
        this.round = round;
        this.depth = depth;
        this.minPollInterval = minPollInterval;
        this.maxPollInterval = maxPollInterval;
        this.claimLimitResetNanos = claimLimitReset.toNanos();
        this.claimLimit = depth;
    }

    /** A loop of whole rounds that report whether they found rows (depth 1). */
    static DispatchLoop<Boolean> ofRounds(BooleanSupplier round, Duration minPollInterval, Duration maxPollInterval) {
        return new DispatchLoop<>(
                new Round<>() {
                    @Override
                    public @Nullable Boolean claim() {
                        return round.getAsBoolean() ? Boolean.TRUE : null;
                    }

                    @Override
                    public void complete(Boolean batch) {}
                },
                1,
                minPollInterval,
                maxPollInterval);
    }

    /** See {@link OutboxDispatcher#wakeUp()}. */
    void wakeUp() {
        lock.lock();
        try {
            wakeUpRequested = true;
            // Rows were appended: they may be heads the batches in flight do not hold.
            claimLimit = depth;
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** Starts the loop on a daemon thread of its own; returns {@code false} if it was running already. */
    synchronized boolean start() {
        if (running) {
            return false;
        }
        running = true;
        int number = THREADS.incrementAndGet();
        if (depth > 1) {
            AtomicInteger senderNumber = new AtomicInteger();
            senders = Executors.newFixedThreadPool(depth, runnable -> {
                Thread sender =
                        new Thread(runnable, "sumi-outbox-sender-" + number + "-" + senderNumber.incrementAndGet());
                sender.setDaemon(true);
                return sender;
            });
        }
        Thread loop = new Thread(this::loop, "sumi-outbox-dispatcher-" + number);
        loop.setDaemon(true);
        this.thread = loop;
        loop.start();
        return true;
    }

    /** See {@link OutboxDispatcher#stop(Duration)}. */
    void stop(Duration timeout) {
        Thread loop;
        ExecutorService sending;
        synchronized (this) {
            if (!running) {
                return;
            }
            running = false;
            loop = thread;
            sending = senders;
            thread = null;
            senders = null;
        }
        wakeUp();
        try {
            long deadline = System.nanoTime() + timeout.toNanos();
            if (loop != null && loop != Thread.currentThread()) {
                // The loop ends after the batches in flight are marked.
                loop.join(Math.max(1, timeout.toMillis()));
            }
            if (sending != null) {
                sending.shutdown();
                if (!sending.awaitTermination(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                    // Interrupted, the publishers give up; the marks that follow are short.
                    sending.shutdownNow();
                    sending.awaitTermination(MARK_AFTER_INTERRUPT_SECONDS, TimeUnit.SECONDS);
                }
            }
            if (loop != null && loop != Thread.currentThread() && loop.isAlive()) {
                loop.interrupt();
                loop.join(1000);
            }
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
    }

    boolean isRunning() {
        return running;
    }

    private void loop() {
        Duration interval = minPollInterval;
        try {
            while (running) {
                if (!awaitFreeSender()) {
                    break;
                }
                long completedBefore;
                int inFlightAtClaim;
                lock.lock();
                try {
                    completedBefore = completed;
                    inFlightAtClaim = inFlight;
                } finally {
                    lock.unlock();
                }
                B batch;
                boolean failed = false;
                try {
                    batch = round.claim();
                    if (batch != null && depth == 1) {
                        round.complete(batch);
                    }
                    recovered();
                } catch (RuntimeException ex) {
                    batch = null;
                    failed = true;
                    roundFailed(ex);
                }
                if (depth > 1 && !failed) {
                    limitClaims(batch, inFlightAtClaim);
                }
                if (batch != null && depth > 1) {
                    // Claimed: send at once, whether or not a stop came meanwhile (its deadline runs).
                    sendAsync(batch);
                    if (!round.mayHaveLeftRows(batch) && running) {
                        // Everything due is claimed: another claim now would find nothing (and, with
                        // ordered topics, walk every held-back row to learn so). Claim again when a
                        // batch completes (its aggregates' next rows may be due) or rows are appended.
                        awaitCompletionOrWakeUp(completedBefore);
                        interval = minPollInterval;
                        continue;
                    }
                }
                if (batch != null || !running) {
                    // Busy: go on at once, more rows (or the next rows of an aggregate) may be due.
                    interval = minPollInterval;
                    continue;
                }
                if (!failed && awaitCompletionOrWakeUp(completedBefore)) {
                    // Nothing due but batches in flight: one completed (its aggregates' next rows may be
                    // due now) or rows were appended. No idle back-off.
                    interval = minPollInterval;
                    continue;
                }
                boolean woken = awaitWakeUp(interval);
                interval = woken ? minPollInterval : min(interval.multipliedBy(2), maxPollInterval);
            }
        } finally {
            awaitInFlightCompleted();
        }
    }

    private void sendAsync(B batch) {
        ExecutorService sending = senders;
        lock.lock();
        try {
            inFlight++;
        } finally {
            lock.unlock();
        }
        Runnable send = () -> {
            try {
                round.complete(batch);
            } catch (RuntimeException | Error ex) {
                // The round logged what it could not record; the rows stay leased until their lease ends.
                log.warn("An outbox batch could not be completed: {}", DispatchRound.summary(ex));
            } finally {
                lock.lock();
                try {
                    inFlight--;
                    completed++;
                    changed.signalAll();
                } finally {
                    lock.unlock();
                }
            }
        };
        if (sending == null) {
            // Stopped between the claim and here: complete on this thread rather than abandon the claim.
            send.run();
            return;
        }
        try {
            sending.execute(send);
        } catch (java.util.concurrent.RejectedExecutionException ex) {
            send.run();
        }
    }

    /**
     * After a claim made with {@code inFlightAtClaim} batches in flight: one that found nothing
     * while batches were in flight lowers the claim limit to that many, for
     * {@link #claimLimitResetNanos}: a claim with as many in flight would most likely find nothing
     * again, after walking the held-back rows. Not lifted by a claim that fills its batch below the
     * limit: the batch that completed freed the heads it took, which is what the next claim takes.
     */
    private void limitClaims(@Nullable B batch, int inFlightAtClaim) {
        lock.lock();
        try {
            // A claim is made only below the limit, and only a wake-up changes it meanwhile (upwards):
            // inFlightAtClaim is below the limit here.
            if (batch == null && inFlightAtClaim > 0) {
                claimLimit = inFlightAtClaim;
                claimLimitSince = System.nanoTime();
                log.debug(
                        "An outbox claim with {} batch(es) in flight found nothing: no claim with as many in flight"
                                + " for {} ms",
                        inFlightAtClaim,
                        TimeUnit.NANOSECONDS.toMillis(claimLimitResetNanos));
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * Waits until fewer than {@code depth} batches (or the claim limit) are in flight; returns
     * {@code false} if stopped meanwhile.
     */
    private boolean awaitFreeSender() {
        lock.lock();
        try {
            while (running) {
                if (claimLimit < depth && System.nanoTime() - claimLimitSince >= claimLimitResetNanos) {
                    claimLimit = depth;
                }
                if (inFlight < claimLimit) {
                    break;
                }
                if (claimLimit < depth) {
                    changed.awaitNanos(claimLimitResetNanos - (System.nanoTime() - claimLimitSince));
                } else {
                    changed.await();
                }
            }
            return running;
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            running = false;
            return false;
        } finally {
            lock.unlock();
        }
    }

    /**
     * If batches are in flight, waits until one of them completes after {@code completedBefore}, or
     * a wake-up, or stop; returns {@code false} at once (without waiting) when none is in flight
     * and none completed meanwhile.
     */
    private boolean awaitCompletionOrWakeUp(long completedBefore) {
        lock.lock();
        try {
            if (inFlight == 0 && completed == completedBefore) {
                return false;
            }
        } finally {
            lock.unlock();
        }
        awaitWakeUp(maxPollInterval, completedBefore);
        return true;
    }

    /** At the loop's end: the batches in flight are marked before it returns (until interrupted). */
    private void awaitInFlightCompleted() {
        lock.lock();
        try {
            while (inFlight > 0) {
                changed.await();
            }
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
        } finally {
            lock.unlock();
        }
    }

    private void recovered() {
        if (consecutiveErrors > 0) {
            log.info("The outbox dispatcher works again after {} failed round(s)", consecutiveErrors);
        }
        consecutiveErrors = 0;
    }

    private void roundFailed(RuntimeException ex) {
        consecutiveErrors++;
        if (consecutiveErrors == 1) {
            log.warn("An outbox dispatch round failed; retrying with backoff", ex);
        } else {
            log.warn(
                    "An outbox dispatch round failed again ({} in a row): {}",
                    consecutiveErrors,
                    DispatchRound.summary(ex));
        }
    }

    /** Waits up to {@code timeout} for {@link #wakeUp()}; returns whether it came. */
    private boolean awaitWakeUp(Duration timeout) {
        return awaitWakeUp(timeout, -1);
    }

    /**
     * Waits up to {@code timeout} for {@link #wakeUp()} or, unless {@code completedBefore} is
     * negative, for a batch to complete after {@code completedBefore} batches had; returns whether
     * a wake-up came (and consumes it).
     */
    private boolean awaitWakeUp(Duration timeout, long completedBefore) {
        lock.lock();
        try {
            long nanos = timeout.toNanos();
            while (!wakeUpRequested && running && nanos > 0 && (completedBefore < 0 || completed == completedBefore)) {
                nanos = changed.awaitNanos(nanos);
            }
            boolean woken = wakeUpRequested;
            wakeUpRequested = false;
            return woken;
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            running = false;
            return false;
        } finally {
            lock.unlock();
        }
    }

    private static Duration min(Duration a, Duration b) {
        return a.compareTo(b) <= 0 ? a : b;
    }
}
