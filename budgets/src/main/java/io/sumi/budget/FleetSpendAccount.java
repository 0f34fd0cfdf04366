package io.sumi.budget;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Clock;
import java.time.Instant;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.locks.ReentrantLock;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Spend counted for the whole fleet in a {@link SpendStore} ({@code scope: fleet}), per fixed window
 * aligned to the epoch <strong>and named by the store's clock</strong>.
 *
 * <p>Windows: the store answers every reservation with the window it reserved in and how long that
 * window had left. This instance spends what it reserved only while its own clock, measured as
 * elapsed time from the reading taken just before the request, says the window has not ended
 * ({@code windowEnd}), and only for instants the window had begun at measured from the reading
 * taken just after the answer ({@code windowBegin}): an interval inside the store's window whatever
 * this instance's clock reads, so instances whose clocks disagree by any amount share one window,
 * and a permit is judged at an instant of the window it is charged to (with clocks that keep rate).
 *
 * <p>Chunks: a call does not pay a round trip. The instance reserves a chunk in the shared window,
 * in one atomic statement that succeeds only if the window stays within the fleet's limit, and
 * spends it locally. When the window cannot give a whole chunk, the instance takes what is left if
 * the call fits in it. A chunk grows from the call's own cost: each reservation is
 * {@code max(need, min(chunk-size, reserved))}, where {@code reserved} is what this instance has
 * reserved in the window before it. So what an instance holds unspent is less than
 * {@code min(chunk-size, reserved)}, plus the costs of calls released or lowered since; an instance
 * that dies leaks that much of its window at most (the money of its calls in flight counts as
 * spent: they may have been made), and a crash loop whose incarnations die after their first call
 * of a window leaks nothing beyond those calls. Unspent chunk goes back to the store when the
 * window has ended (for the record only) and when the registry closes.
 *
 * <p>Variable costs: a cost recorded above the reservation is taken from the local chunk, else
 * charged to the call's window unconditionally (the money is spent); this is the only overshoot.
 * A charge that fails is kept and charged on the next round trip that succeeds.
 *
 * <p>Concurrency: the state is guarded by {@code this}, which is held only for local steps, never
 * across a round trip. Round trips ({@link #fetch}, {@link #refreshFromStore}, {@link #flush},
 * {@link #close}) are serialized by {@code storeLock}, taken without the budget's lock, so a thread
 * waiting on the store holds up only threads that need the store too. The other methods run under
 * the owning budget's lock and take {@code this} briefly. Lock order: budget, then {@code this};
 * {@code storeLock}, then {@code this}; the budget's lock is never taken here.
 */
final class FleetSpendAccount implements SpendAccount {

    private static final Logger log = LoggerFactory.getLogger(io.sumi.budget.Budget.class);

    /** How many windows of the past stay in the store (they tell the spend of the recent past). */
    static final int WINDOWS_KEPT = 100;

    /** How often an exhausted instance asks the store whether room appeared (another instance gave some back). */
    static final long RECHECK_MILLIS = 1_000;

    /** Rounds of {@link #fetch} before it gives up on a window that other instances keep taking. */
    private static final int FETCH_ROUNDS = 3;

    static final String STORE_FAILURES = "sumi.budget.store.failures";
    static final String STORE_ROUND_TRIPS = "sumi.budget.store.round.trips";

    private final String name;
    private final SpendStore store;
    private final Clock clock;
    private final Counter failures;
    private final Counter roundTrips;
    private final ReentrantLock storeLock = new ReentrantLock();

    // Guarded by this.
    /** The store's window this instance spends in; {@link Long#MIN_VALUE}: none (it must ask). */
    private long windowStart = Long.MIN_VALUE;

    private long windowMillis;
    /** By this instance's clock: the window has begun for instants from here on. */
    private Instant windowBegin = Instant.MAX;
    /** By this instance's clock: the window is over from here on. */
    private Instant windowEnd = Instant.MIN;
    /** Reserved in the shared window and not yet spent by this instance. */
    private double local;
    /** Reserved in the shared window by this instance (the chunk grows with it). */
    private double reservedHere;
    /** The window's shared spend as of this instance's last round trip. */
    private double sharedSpent;

    private double fleetLimit = Double.NaN;
    private boolean exhausted;
    private long nextRecheck;
    /** Costs recorded above their reservation that could not be charged yet, by window. */
    private final Map<Long, Double> pendingCharges = new TreeMap<>();
    /** What was left unspent of windows that ended, to give back (for the record), by window. */
    private final Map<Long, Double> pendingReleases = new TreeMap<>();

    private boolean forgetDue;

    // Written under storeLock or the budget's lock.
    private volatile boolean registered;
    private volatile boolean storeFailing;

    FleetSpendAccount(String name, SpendStore store, Clock clock, MeterRegistry meterRegistry) {
        this.name = name;
        this.store = store;
        this.clock = clock;
        this.failures = Counter.builder(STORE_FAILURES)
                .description("Round trips to the shared spend store that failed (calls refused: fail closed)")
                .tag("budget", name)
                .register(meterRegistry);
        this.roundTrips = Counter.builder(STORE_ROUND_TRIPS)
                .description("Round trips to the shared spend store (chunk reservations, reads, returns)")
                .tag("budget", name)
                .register(meterRegistry);
    }

    private void ensureRegistered(BudgetConfig config) {
        if (registered) {
            return;
        }
        double limit = call("register the limit", () -> store.registerLimit(name, config.limit()));
        synchronized (this) {
            fleetLimit = limit;
        }
        registered = true;
        if (limit != config.limit()) {
            log.info(
                    "Budget '{}' (fleet): the fleet's limit is {} (set at run time), not the configured {}",
                    name,
                    limit,
                    config.limit());
        }
    }

    // ------------------------------------------------------------------ local steps (under this)

    private boolean hasWindow(BudgetConfig config) {
        return windowStart != Long.MIN_VALUE && windowMillis == config.window().toMillis();
    }

    /** Whether {@code now} is inside the window this instance spends in. */
    private boolean isCurrent(Instant now, BudgetConfig config) {
        return hasWindow(config) && !now.isBefore(windowBegin) && now.isBefore(windowEnd);
    }

    /**
     * Leaves a window that has ended (or whose length was reconfigured), keeping what this instance
     * did not spend of it to give back. An instant before the window began (read before another
     * thread's answer) does not end it.
     */
    private void leaveIfOver(Instant now, BudgetConfig config) {
        if (windowStart == Long.MIN_VALUE || (hasWindow(config) && now.isBefore(windowEnd))) {
            return;
        }
        leave();
    }

    private void leave() {
        if (local > 0) {
            pendingReleases.merge(windowStart, local, Double::sum);
        }
        windowStart = Long.MIN_VALUE;
        windowBegin = Instant.MAX;
        windowEnd = Instant.MIN;
        local = 0;
        reservedHere = 0;
        sharedSpent = 0;
        exhausted = false;
        forgetDue = true;
    }

    /**
     * Takes the store's answer about its current window: asked and answered by this instance's
     * clock just before the request and just after the answer.
     */
    private void adopt(SpendStore.Window window, long millis, Instant asked, Instant answered) {
        if (windowStart != window.start() || windowMillis != millis) {
            if (windowStart != Long.MIN_VALUE) {
                leave();
            }
            windowStart = window.start();
            windowMillis = millis;
            windowBegin = answered.plusMillis(window.millisLeft() - millis);
            windowEnd = asked.plusMillis(window.millisLeft());
        } else {
            // The same window answered again: the interval can only narrow.
            Instant end = asked.plusMillis(window.millisLeft());
            Instant begin = answered.plusMillis(window.millisLeft() - millis);
            if (end.isBefore(windowEnd)) {
                windowEnd = end;
            }
            if (begin.isAfter(windowBegin)) {
                windowBegin = begin;
            }
        }
    }

    @Override
    public synchronized Attempt tryReserve(Instant now, double cost, BudgetConfig config) {
        leaveIfOver(now, config);
        if (isCurrent(now, config) && cost <= local) {
            local -= cost;
            return Attempt.granted(new Held(windowStart, cost));
        }
        return Attempt.ASK_STORE;
    }

    private void markExhausted(Instant now) {
        exhausted = true;
        nextRecheck = now.toEpochMilli() + Math.min(RECHECK_MILLIS, Math.max(1, windowMillis / 4));
    }

    // ------------------------------------------------------------------ round trips (under storeLock)

    @Override
    public boolean fetch(double cost, BudgetConfig config) {
        storeLock.lock();
        try {
            long millis = config.window().toMillis();
            for (int round = 0; round < FETCH_ROUNDS; round++) {
                double chunk;
                Map<Long, Double> releases;
                boolean forget;
                synchronized (this) {
                    Instant now = clock.instant();
                    leaveIfOver(now, config);
                    if (isCurrent(now, config) && cost <= local) {
                        // Another thread's round trip brought room meanwhile.
                        return true;
                    }
                    double held = isCurrent(now, config) ? local : 0;
                    double need = cost - held;
                    chunk = Math.max(need, Math.min(config.chunkSize(), reservedHere));
                    releases = new TreeMap<>(pendingReleases);
                    pendingReleases.clear();
                    forget = forgetDue;
                    forgetDue = false;
                }
                ensureRegistered(config);
                giveBack(releases);
                if (forget) {
                    forgetOldWindows(millis);
                }
                chargePending();
                Instant asked = clock.instant();
                SpendStore.Grant grant = call("reserve a chunk", () -> store.tryReserve(name, millis, chunk));
                Instant answered = clock.instant();
                synchronized (this) {
                    adopt(grant.window(), millis, asked, answered);
                    if (grant.reserved()) {
                        take(chunk);
                        if (cost <= local) {
                            return true;
                        }
                        // The window changed under the request: the chunk was sized for another one.
                        continue;
                    }
                }
                // The window cannot give a whole chunk: take what is left, if the call fits in it.
                Instant readAsked = clock.instant();
                SpendStore.CurrentWindow current = call("read the window", () -> store.readCurrent(name, millis));
                Instant readAnswered = clock.instant();
                double rest;
                synchronized (this) {
                    adopt(current.window(), millis, readAsked, readAnswered);
                    fleetLimit = current.state().limit();
                    sharedSpent = current.state().spent();
                    double available = current.state().remaining();
                    double need = cost - local;
                    if (available < need) {
                        if (local + available < config.costPerCall() || cost <= config.costPerCall()) {
                            markExhausted(readAnswered);
                        }
                        return false;
                    }
                    rest = Math.min(available, Math.max(need, chunk));
                }
                Instant restAsked = clock.instant();
                SpendStore.Grant restGrant = call("reserve the rest", () -> store.tryReserve(name, millis, rest));
                Instant restAnswered = clock.instant();
                synchronized (this) {
                    adopt(restGrant.window(), millis, restAsked, restAnswered);
                    if (restGrant.reserved()) {
                        take(rest);
                        if (cost <= local) {
                            return true;
                        }
                    }
                }
                // Another instance took some meanwhile, or the window changed: ask again.
            }
            synchronized (this) {
                markExhausted(clock.instant());
            }
            return false;
        } finally {
            storeLock.unlock();
        }
    }

    /** Under this: a reservation of {@code amount} landed in the current window. */
    private void take(double amount) {
        sharedSpent += amount;
        local += amount;
        reservedHere += amount;
        exhausted = false;
    }

    /** What windows that ended left unspent goes back; the windows are over, so a failure costs nothing. */
    private void giveBack(Map<Long, Double> releases) {
        for (Map.Entry<Long, Double> release : releases.entrySet()) {
            try {
                act("return the unspent chunk", () -> store.release(name, release.getKey(), release.getValue()));
            } catch (SpendStoreUnavailableException ex) {
                // The window is over: what stays reserved in it costs the fleet nothing.
            }
        }
    }

    private void forgetOldWindows(long millis) {
        try {
            act("forget old windows", () -> store.forgetOldWindows(name, millis, WINDOWS_KEPT));
        } catch (SpendStoreUnavailableException ex) {
            synchronized (this) {
                // Old rows only take room; the next window tries again.
                forgetDue = true;
            }
        }
    }

    @Override
    public void refreshFromStore(BudgetConfig config) {
        Instant now = clock.instant();
        synchronized (this) {
            if (!isCurrent(now, config)
                    || !exhausted
                    || local >= config.costPerCall()
                    || now.toEpochMilli() < nextRecheck) {
                return;
            }
        }
        if (!storeLock.tryLock()) {
            // A round trip is under way: its answer tells.
            return;
        }
        try {
            long millis = config.window().toMillis();
            try {
                Instant asked = clock.instant();
                SpendStore.CurrentWindow current = call("read the window", () -> store.readCurrent(name, millis));
                Instant answered = clock.instant();
                synchronized (this) {
                    adopt(current.window(), millis, asked, answered);
                    fleetLimit = current.state().limit();
                    sharedSpent = current.state().spent();
                    if (local + current.state().remaining() >= config.costPerCall()) {
                        exhausted = false;
                        return;
                    }
                    markExhausted(answered);
                }
            } catch (SpendStoreUnavailableException ex) {
                synchronized (this) {
                    // Still closed: the next refresh asks again.
                    markExhausted(clock.instant());
                }
            }
        } finally {
            storeLock.unlock();
        }
    }

    @Override
    public void flush() {
        synchronized (this) {
            if (pendingCharges.isEmpty()) {
                return;
            }
        }
        storeLock.lock();
        try {
            chargePending();
        } catch (SpendStoreUnavailableException ex) {
            // Kept in pendingCharges: charged on the next round trip that succeeds.
        } finally {
            storeLock.unlock();
        }
    }

    /** Under storeLock: charges what is pending, one window at a time, keeping what fails. */
    private void chargePending() {
        while (true) {
            long window;
            double amount;
            synchronized (this) {
                if (pendingCharges.isEmpty()) {
                    return;
                }
                Map.Entry<Long, Double> next =
                        pendingCharges.entrySet().iterator().next();
                window = next.getKey();
                amount = next.getValue();
                pendingCharges.remove(window);
            }
            try {
                act("charge a recorded cost", () -> store.charge(name, window, amount));
            } catch (SpendStoreUnavailableException ex) {
                synchronized (this) {
                    pendingCharges.merge(window, amount, Double::sum);
                }
                throw ex;
            }
        }
    }

    // ------------------------------------------------------------------ local steps (under the budget's lock)

    @Override
    public synchronized void setCost(Reservation reservation, double cost, Instant now, BudgetConfig config) {
        Held held = (Held) reservation;
        double delta = cost - held.cost;
        held.cost = cost;
        boolean current = held.window == windowStart && isCurrent(now, config);
        if (delta <= 0) {
            if (current) {
                local -= delta;
            }
            // A lower cost in a window that is over changes nothing the fleet can still spend.
            return;
        }
        double fromLocal = current ? Math.min(local, delta) : 0;
        local -= fromLocal;
        double charge = delta - fromLocal;
        if (charge > 0) {
            // Sent by flush(), which the budget calls once its lock is released.
            pendingCharges.merge(held.window, charge, Double::sum);
            if (current) {
                sharedSpent += charge;
            }
        }
    }

    @Override
    public synchronized void release(Reservation reservation, Instant now, BudgetConfig config) {
        Held held = (Held) reservation;
        if (held.window == windowStart && isCurrent(now, config)) {
            local += held.cost;
        }
    }

    @Override
    public synchronized double total(Instant now, BudgetConfig config) {
        return isCurrent(now, config) ? Math.max(0, sharedSpent - local) : 0;
    }

    @Override
    public synchronized boolean full(Instant now, BudgetConfig config) {
        // Local knowledge only; refreshFromStore asks the store whether room appeared.
        return isCurrent(now, config) && exhausted && local < config.costPerCall();
    }

    @Override
    public synchronized Instant roomAt(Instant now, BudgetConfig config) {
        return isCurrent(now, config) ? windowEnd : now;
    }

    @Override
    public @Nullable Instant roomAt(Instant now, BudgetConfig config, double cost) {
        return cost <= limit(config) ? roomAt(now, config) : null;
    }

    @Override
    public synchronized double limit(BudgetConfig config) {
        return Double.isNaN(fleetLimit) ? config.limit() : fleetLimit;
    }

    @Override
    public boolean roomMayAppearEarly() {
        return true;
    }

    @Override
    public void limitChanged(BudgetConfig oldConfig, BudgetConfig newConfig) {
        if (oldConfig.limit() == newConfig.limit()) {
            return;
        }
        try {
            // Registered first with the configured limit, which the store keeps as "configured": an
            // instance restarting with that configuration then keeps the limit set now.
            ensureRegistered(oldConfig);
            act("set the fleet's limit", () -> store.setLimit(name, newConfig.limit()));
        } catch (SpendStoreUnavailableException ex) {
            throw new IllegalStateException(
                    "Budget '" + name + "': the new limit " + newConfig.limit()
                            + " could not be stored for the fleet; the budget keeps its settings",
                    ex);
        }
        synchronized (this) {
            fleetLimit = newConfig.limit();
            exhausted = false;
        }
    }

    @Override
    public void close() {
        storeLock.lock();
        try {
            double unspent;
            long window;
            Map<Long, Double> releases;
            synchronized (this) {
                unspent = local;
                window = windowStart;
                local = 0;
                releases = new TreeMap<>(pendingReleases);
                pendingReleases.clear();
            }
            giveBack(releases);
            if (unspent > 0 && window != Long.MIN_VALUE) {
                try {
                    act("return the unspent chunk", () -> store.release(name, window, unspent));
                    log.info("Budget '{}' (fleet): returned {} unspent to the shared window", name, unspent);
                } catch (SpendStoreUnavailableException ex) {
                    // Logged; it expires with its window.
                }
            }
            try {
                chargePending();
            } catch (SpendStoreUnavailableException ex) {
                synchronized (this) {
                    log.warn(
                            "Budget '{}' (fleet): recorded costs {} could not be charged before shutdown",
                            name,
                            pendingCharges);
                }
            }
        } finally {
            storeLock.unlock();
        }
    }

    /** Unspent chunk held by this instance in the current window (for tests and the gauge). */
    synchronized double localChunk() {
        return local;
    }

    /** A store call with no answer; {@link #call} keeps its failure handling. */
    private void act(String what, Runnable work) {
        call(what, () -> {
            work.run();
            return Boolean.TRUE;
        });
    }

    private interface StoreCall<T> {
        T run();
    }

    private <T> T call(String what, StoreCall<T> work) {
        roundTrips.increment();
        T result;
        try {
            result = work.run();
        } catch (RuntimeException ex) {
            failures.increment();
            if (!storeFailing) {
                storeFailing = true;
                log.error(
                        "Budget '{}' (fleet): the shared spend store failed to {}; calls are REFUSED (fail closed) until"
                                + " it answers again",
                        name,
                        what,
                        ex);
            } else {
                log.debug("Budget '{}' (fleet): the shared spend store failed again to {}", name, what, ex);
            }
            throw new SpendStoreUnavailableException(
                    "Budget '" + name + "': the shared spend store failed to " + what + ": " + ex.getMessage(), ex);
        }
        if (storeFailing) {
            storeFailing = false;
            log.info("Budget '{}' (fleet): the shared spend store answers again", name);
        }
        return result;
    }

    /** A call's reservation in a window. */
    private static final class Held implements Reservation {
        final long window;
        double cost;

        Held(long window, double cost) {
            this.window = window;
            this.cost = cost;
        }

        @Override
        public double cost() {
            return cost;
        }
    }

    @Override
    public void resetWindow() {
        // The window is the fleet's: one instance forgetting it would let every other one overspend.
        throw new UnsupportedOperationException("Budget '" + name + "' is a fleet budget: its window is shared by"
                + " every instance and is not reset from one; raise its limit instead (it applies to the fleet)");
    }
}
