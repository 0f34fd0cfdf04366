package io.sumi.consumer;

import io.sumi.store.MessageStatus;
import io.sumi.store.ProcessedMessage;
import io.sumi.store.ProcessedMessageStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps the leases of running lease-mode handlers alive: while a handler runs, its claims are
 * renewed ({@link ProcessedMessageStore#renewAll}, fenced on the claim token) every third of the
 * lease, from a small scheduler shared by every handler of the executor, never from the handler's
 * thread. A JVM that dies or freezes stops renewing, and its leases end one lease later, as before.
 *
 * <p>Design notes.
 * <ul>
 *   <li>Start and stop: {@link #start} is called once the claims are taken, and the returned
 *   {@link Renewal} is closed the moment the handler returns or throws, before the claims are
 *   completed or released. Closing takes the renewal's lock, so it waits for a renewal statement
 *   in flight (one short {@code UPDATE}) to end; once {@link Renewal#close} returns, no renewal of
 *   that call runs again. Without that wait a renewal could land after a release and hold the
 *   released key for a whole lease.</li>
 *   <li>A poll's claims ({@link LeasePollClaim}): one renewal from the poll's claim to the end of
 *   the poll ({@code releaseUnrun}), for the claims not yet completed or released; each claim
 *   leaves it ({@link Renewal#forget}, which waits the same way) just before its completion or
 *   release is written, and comes back if its completion fails. The max run counts from the
 *   poll's claim: it bounds the whole poll.</li>
 *   <li>Results of one renewal: every claim renewed; some claims gone (another consumer took them
 *   over after the lease ran out, e.g. while this JVM was frozen): those are counted
 *   {@code lost} and no longer renewed, the others go on; the statement failed (the database is
 *   unreachable): counted {@code failed}, logged, and tried again at the next tick (two more
 *   chances before the lease runs out); renewed, but late (it landed more than two thirds of the
 *   lease after the previous renewal, or the claim: about a third of the lease or less was left,
 *   typically because the statement waited for a connection): counted {@code late} besides
 *   {@code renewed} and logged at WARN, so that an operator sees leases at risk before one lapses;
 *   the store cannot renew
 *   ({@link UnsupportedOperationException}): renewal stops for that call, logged once per executor.</li>
 *   <li>Connections: a renewal takes whatever connection the store gives it. A JDBC store on the
 *   application's pool makes it wait behind the application's work, for up to the pool's
 *   connection timeout, which may exceed the lease; hence the JDBC store's renewal DataSource (a
 *   small pool of its own, set up by the starter). A renewal waiting for a connection holds up
 *   its handler's completion too (closing waits for a renewal in flight, see above), so that
 *   wait must be bounded well below the lease.</li>
 *   <li>Hard maximum: after the handler's max run time, renewal stops for good, a WARN says so,
 *   and {@code sumi.leases.overruns} counts it; the lease then runs out within one lease, and
 *   another consumer may take the message over while the handler still runs. A claim is
 *   therefore held at most max run + lease.</li>
 *   <li>Threads: {@value #THREADS} daemon threads, created on demand and ended after a minute
 *   idle, so an executor that runs no long handlers holds no thread. Two, so that one renewal
 *   stuck on a dead connection does not hold up every other.</li>
 *   <li>Time: the renewal schedule and the max run are measured on this JVM's monotonic clock
 *   ({@link System#nanoTime}), which only times this JVM's own handler; the lease's end is
 *   written on the store's shared clock. What a renewal measures (late, max run) is read from the
 *   renewer's ticker ({@code System::nanoTime} unless a test passes one it moves by hand, so that
 *   a late renewal is made late without sleeping); the ticks themselves run on the scheduler.</li>
 * </ul>
 */
final class LeaseRenewer implements AutoCloseable {

    static final int THREADS = 2;

    private static final Logger log = LoggerFactory.getLogger(LeaseRenewer.class);

    private final ProcessedMessageStore store;
    private final OutcomeRecorder recorder;
    private final boolean enabled;
    private final Duration defaultMaxRun;
    private final ScheduledThreadPoolExecutor scheduler;
    private final LongSupplier ticker;
    private volatile boolean unsupportedLogged;

    /**
     * @param enabled whether leases are renewed at all (off: a lease ends when it ends, as before renewal existed)
     * @param defaultMaxRun the max run time of handlers that set none
     */
    LeaseRenewer(ProcessedMessageStore store, OutcomeRecorder recorder, boolean enabled, Duration defaultMaxRun) {
        this(store, recorder, enabled, defaultMaxRun, System::nanoTime);
    }

    /** @param ticker this JVM's monotonic clock, in nanoseconds ({@code System::nanoTime}) */
    LeaseRenewer(
            ProcessedMessageStore store,
            OutcomeRecorder recorder,
            boolean enabled,
            Duration defaultMaxRun,
            LongSupplier ticker) {
        this.store = store;
        this.ticker = ticker;
        this.recorder = recorder;
        this.enabled = enabled;
        this.defaultMaxRun = defaultMaxRun;
        AtomicInteger threads = new AtomicInteger();
        this.scheduler = new ScheduledThreadPoolExecutor(THREADS, runnable -> {
            Thread thread = new Thread(runnable, "sumi-lease-renewal-" + threads.incrementAndGet());
            thread.setDaemon(true);
            return thread;
        });
        // A call that ends removes its tasks at once (else each would wait in the queue until its time).
        scheduler.setRemoveOnCancelPolicy(true);
        scheduler.setKeepAliveTime(1, TimeUnit.MINUTES);
        scheduler.allowCoreThreadTimeOut(true);
        scheduler.setContinueExistingPeriodicTasksAfterShutdownPolicy(false);
        scheduler.setExecuteExistingDelayedTasksAfterShutdownPolicy(false);
    }

    /** What renewal {@link #start} returns when it has nothing to renew. */
    private static final Renewal NONE =
            new Renewal(null, "", 0, List.of(), Duration.ofSeconds(1), 1, 1, System::nanoTime);

    /**
     * Starts renewing {@code keys}, claimed with {@code token}, for as long as the returned renewal
     * is open (and at most the handler's max run time).
     */
    Renewal start(HandlerDefinition handler, long token, List<String> keys) {
        if (!enabled || keys.isEmpty() || scheduler.isShutdown()) {
            return NONE;
        }
        Duration maxRun = handler.maxRun() != null ? handler.maxRun() : defaultMaxRun;
        long interval = Math.max(1, handler.lease().toNanos() / 3);
        Renewal renewal =
                new Renewal(this, handler.consumer(), token, keys, handler.lease(), interval, maxRun.toNanos(), ticker);
        try {
            // One task per call on the hot path; the max-run deadline is scheduled by the last tick
            // before it (or now, if it comes before the first tick), so quick handlers never pay for it.
            renewal.schedule(
                    scheduler.scheduleWithFixedDelay(renewal::renew, interval, interval, TimeUnit.NANOSECONDS),
                    maxRun.toNanos() <= interval
                            ? scheduler.schedule(renewal::overrun, maxRun.toNanos(), TimeUnit.NANOSECONDS)
                            : null);
        } catch (RejectedExecutionException closed) {
            // The executor was closed meanwhile: as if the JVM were going away, nothing is renewed.
            return NONE;
        }
        return renewal;
    }

    /** Stops every renewal at once; running handlers keep their leases until they run out. */
    @Override
    public void close() {
        scheduler.shutdownNow();
    }

    /**
     * The renewal of one call's claims. Its ticks run on the renewer's threads; {@link #close} runs
     * on the handler's thread. Everything it changes is guarded by its lock.
     */
    static final class Renewal implements AutoCloseable {

        private final @Nullable LeaseRenewer renewer;
        private final String consumer;
        private final long token;
        private final Set<String> keys;
        private final Duration lease;
        private final long interval;
        private final long maxRun;
        private final long started;
        private final long lateAfter;
        private final LongSupplier ticker;
        private final ReentrantLock lock = new ReentrantLock();
        /** When the last renewal landed (at first: when the claims were taken). */
        private long lastRenewed;

        private boolean stopped;
        private @Nullable ScheduledFuture<?> ticks;
        private @Nullable ScheduledFuture<?> deadline;

        private Renewal(
                @Nullable LeaseRenewer renewer,
                String consumer,
                long token,
                List<String> keys,
                Duration lease,
                long interval,
                long maxRun,
                LongSupplier ticker) {
            this.renewer = renewer;
            this.ticker = ticker;
            this.consumer = consumer;
            this.token = token;
            this.keys = new LinkedHashSet<>(keys);
            this.lease = lease;
            this.interval = interval;
            this.maxRun = maxRun;
            this.started = ticker.getAsLong();
            this.lastRenewed = started;
            this.lateAfter = lease.toNanos() / 3 * 2;
            this.stopped = renewer == null;
        }

        private void schedule(ScheduledFuture<?> ticks, @Nullable ScheduledFuture<?> deadline) {
            lock.lock();
            try {
                this.ticks = ticks;
                this.deadline = deadline;
                if (stopped) {
                    cancel();
                }
            } finally {
                lock.unlock();
            }
        }

        /**
         * Stops renewing {@code done} (claims about to be completed or released), the others go on:
         * waits for a renewal statement in flight, so none of them is renewed after this returns
         * (a renewal landing after a release would hold the released key for a whole lease).
         */
        void forget(Collection<String> done) {
            if (renewer == null) {
                return;
            }
            lock.lock();
            try {
                done.forEach(keys::remove);
            } finally {
                lock.unlock();
            }
        }

        /** Renews {@code again} once more (claims {@link #forget forgotten} whose completion failed), unless stopped. */
        void renewAgain(Collection<String> again) {
            if (renewer == null) {
                return;
            }
            lock.lock();
            try {
                if (!stopped) {
                    keys.addAll(again);
                }
            } finally {
                lock.unlock();
            }
        }

        /** One tick: renews what is still held. Never throws (a throwing periodic task would end silently). */
        private void renew() {
            LeaseRenewer owner = renewer;
            if (owner == null) {
                return;
            }
            lock.lock();
            try {
                if (stopped || keys.isEmpty()) {
                    return;
                }
                long left = maxRun - (ticker.getAsLong() - started);
                if (left <= 0) {
                    overrunLocked(owner);
                    return;
                }
                if (deadline == null && left <= interval) {
                    try {
                        deadline = owner.scheduler.schedule(this::overrun, left, TimeUnit.NANOSECONDS);
                    } catch (RejectedExecutionException closed) {
                        // The executor is closing: nothing is renewed any more anyway.
                    }
                }
                int renewed;
                long begun = ticker.getAsLong();
                try {
                    renewed = owner.store.renewAll(consumer, token, List.copyOf(keys), lease);
                } catch (UnsupportedOperationException ex) {
                    stopLocked();
                    owner.unsupported(consumer, ex);
                    return;
                } catch (RuntimeException ex) {
                    owner.recorder.leaseRenewal(consumer, OutcomeRecorder.Renewal.FAILED, keys.size());
                    log.warn(
                            "Consumer '{}' could not renew the lease of {} message(s) (e.g. {}), last renewed {} ms ago"
                                    + " (lease {}); tried again in {} ms: {}",
                            consumer,
                            keys.size(),
                            keys.iterator().next(),
                            TimeUnit.NANOSECONDS.toMillis(ticker.getAsLong() - lastRenewed),
                            lease,
                            lease.toMillis() / 3,
                            ex.toString());
                    return;
                }
                long landed = ticker.getAsLong();
                if (renewed > 0) {
                    owner.recorder.leaseRenewal(consumer, OutcomeRecorder.Renewal.RENEWED, renewed);
                    if (landed - lastRenewed > lateAfter) {
                        late(owner, renewed, landed - lastRenewed, landed - begun);
                    }
                    // The statement wrote the lease's new end at about the time it returned: a
                    // renewal is slow because it waited for a connection, not in the UPDATE.
                    lastRenewed = landed;
                }
                if (renewed < keys.size()) {
                    lost(owner);
                }
            } finally {
                lock.unlock();
            }
        }

        /**
         * A renewal landed with about a third of the lease or less left (more than two thirds of it
         * after the previous renewal, or the claim, landed): one more such delay and the claim
         * lapses while its handler runs. Typically the statement waited for a connection.
         */
        private void late(LeaseRenewer owner, int renewed, long sincePrevious, long took) {
            owner.recorder.leaseRenewal(consumer, OutcomeRecorder.Renewal.LATE, renewed);
            long since = TimeUnit.NANOSECONDS.toMillis(sincePrevious);
            long left = lease.toMillis() - since;
            log.warn(
                    "Consumer '{}' renewed the lease of {} message(s) (e.g. {}) late: {} ms after the previous renewal"
                            + " (or the claim), {} (this renewal took {} ms); if renewals stay this late, the lease lapses"
                            + " while the handler runs and another consumer may take the message over. Usual causes: the"
                            + " renewal waited for a database connection (give renewals connections of their own:"
                            + " JdbcProcessedMessageStore.Builder.renewalDataSource, the starter's"
                            + " sumi.consumer.renewal-pool), a failed renewal before it, a slow ledger, a JVM pause",
                    consumer,
                    renewed,
                    keys.iterator().next(),
                    since,
                    left > 0
                            ? "with about " + left + " ms of its " + lease + " lease left"
                            : "about " + -left + " ms after its " + lease
                                    + " lease had run out (nobody had taken the claim over meanwhile)",
                    TimeUnit.NANOSECONDS.toMillis(took));
        }

        /** Some claims were not renewed: find which are gone, stop renewing them, renew the rest. */
        private void lost(LeaseRenewer owner) {
            List<String> gone = new ArrayList<>();
            try {
                for (String key : keys) {
                    ProcessedMessage row = owner.store.find(consumer, key).orElse(null);
                    if (row == null || row.status() != MessageStatus.IN_PROGRESS || row.claimToken() != token) {
                        gone.add(key);
                    }
                }
            } catch (RuntimeException ex) {
                // Which ones is unknown: all are tried again at the next tick.
                log.warn(
                        "Consumer '{}' could not read back the claims its renewal missed: {}", consumer, ex.toString());
                return;
            }
            if (gone.isEmpty()) {
                return;
            }
            gone.forEach(keys::remove);
            owner.recorder.leaseRenewal(consumer, OutcomeRecorder.Renewal.LOST, gone.size());
            log.warn(
                    "Consumer '{}' found the claim of {} message(s) (e.g. {}) taken over by another consumer while its"
                            + " handler still runs (its lease ran out before a renewal reached the ledger: a frozen JVM, or"
                            + " the ledger unreachable for a whole lease); the handler runs more than once for them",
                    consumer,
                    gone.size(),
                    gone.get(0));
            if (keys.isEmpty()) {
                stopLocked();
            }
        }

        /** The handler has run longer than its max run time: renewal stops for good, and it is reported. */
        private void overrun() {
            LeaseRenewer owner = renewer;
            if (owner == null) {
                return;
            }
            lock.lock();
            try {
                if (!stopped) {
                    overrunLocked(owner);
                }
            } finally {
                lock.unlock();
            }
        }

        private void overrunLocked(LeaseRenewer owner) {
            stopLocked();
            owner.recorder.maxRunExceeded(consumer);
            log.warn(
                    "Consumer '{}': a handler has run for {} ms, past its max run time of {} ms, holding {} message(s)"
                            + " (e.g. {}); its lease is no longer renewed and ends within {}, after which another"
                            + " consumer may take the message over while this handler still runs",
                    consumer,
                    TimeUnit.NANOSECONDS.toMillis(ticker.getAsLong() - started),
                    TimeUnit.NANOSECONDS.toMillis(maxRun),
                    keys.size(),
                    keys.isEmpty() ? "-" : keys.iterator().next(),
                    lease);
        }

        /**
         * Stops renewing, at once: waits for a renewal statement in flight, so none runs after
         * this returns. Idempotent.
         */
        @Override
        public void close() {
            if (renewer == null) {
                return;
            }
            lock.lock();
            try {
                stopLocked();
            } finally {
                lock.unlock();
            }
        }

        private void stopLocked() {
            stopped = true;
            cancel();
        }

        private void cancel() {
            if (ticks != null) {
                ticks.cancel(false);
            }
            if (deadline != null) {
                deadline.cancel(false);
            }
        }
    }

    private void unsupported(String consumer, UnsupportedOperationException ex) {
        recorder.leaseRenewal(consumer, OutcomeRecorder.Renewal.FAILED, 1);
        if (!unsupportedLogged) {
            unsupportedLogged = true;
            log.warn(
                    "The ledger store cannot renew leases ({}): lease-mode handlers keep their lease only for the lease"
                            + " itself; a handler that runs longer may be taken over. Implement"
                            + " ProcessedMessageStore.renewAll, or raise the lease above the handler's longest run",
                    ex.getMessage());
        }
    }
}
