package io.sumi.consumer.budget.internal;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.sumi.consumer.budget.BudgetConfig;
import io.sumi.consumer.budget.SpendStore;
import java.time.Instant;
import java.util.Map;
import java.util.TreeMap;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Spend counted for the whole fleet in a {@link SpendStore} ({@code scope: fleet}), per fixed window
 * aligned to the epoch.
 *
 * <p>Chunks: a call does not pay a round trip. The instance reserves a chunk
 * ({@link BudgetConfig#chunkSize()}) in the shared window, in one atomic statement that succeeds
 * only if the window stays within the fleet's limit, and spends it locally. When the window cannot
 * give a whole chunk, the instance takes what is left if one call fits. Unspent chunk goes back to
 * the store when the window rolls over (for the record only: the old window is over) and when the
 * registry closes. Reservations of all instances together never exceed the limit, so the fleet's
 * calls at {@code cost-per-call} never do; an instance that dies keeps at most one chunk of its
 * window reserved and unspent, which expires with the window (the fleet under-spends by it).
 *
 * <p>Variable costs: a cost recorded above the reservation is taken from the local chunk, else
 * charged to the call's window unconditionally (the money is spent); this is the only overshoot.
 * A charge that fails is kept and charged on the next round trip that succeeds.
 *
 * <p>Called only under the owning budget's lock: the round trips of one instance are serial.
 */
final class FleetSpendAccount implements SpendAccount {

    private static final Logger log = LoggerFactory.getLogger(io.sumi.consumer.budget.Budget.class);

    /** How many windows of the past stay in the store (they tell the spend of the recent past). */
    static final int WINDOWS_KEPT = 100;

    /** How often an exhausted instance asks the store whether room appeared (another instance gave some back). */
    static final long RECHECK_MILLIS = 1_000;

    static final String STORE_FAILURES = "sumi.budget.store.failures";
    static final String STORE_ROUND_TRIPS = "sumi.budget.store.round.trips";

    private final String name;
    private final SpendStore store;
    private final Counter failures;
    private final Counter roundTrips;

    private long windowStart = Long.MIN_VALUE;
    private long windowMillis;
    /** Reserved in the shared window and not yet spent by this instance. */
    private double local;
    /** The window's shared spend as of this instance's last round trip. */
    private double sharedSpent;

    private double fleetLimit = Double.NaN;
    private boolean registered;
    private boolean exhausted;
    private long nextRecheck;
    private boolean storeFailing;
    /** Costs recorded above their reservation that could not be charged yet, by window. */
    private final Map<Long, Double> pendingCharges = new TreeMap<>();

    FleetSpendAccount(String name, SpendStore store, MeterRegistry meterRegistry) {
        this.name = name;
        this.store = store;
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
        fleetLimit = call("register the limit", () -> store.registerLimit(name, config.limit()));
        registered = true;
        if (fleetLimit != config.limit()) {
            log.info(
                    "Budget '{}' (fleet): the fleet's limit is {} (set at run time), not the configured {}",
                    name,
                    fleetLimit,
                    config.limit());
        }
    }

    static long windowStartOf(Instant now, long windowMillis) {
        return Math.floorDiv(now.toEpochMilli(), windowMillis) * windowMillis;
    }

    private boolean isCurrent(Instant now, BudgetConfig config) {
        long millis = config.window().toMillis();
        return windowMillis == millis && windowStart == windowStartOf(now, millis);
    }

    /** Moves to the window of {@code now}, giving back what this instance did not spend of the last one. */
    private void roll(Instant now, BudgetConfig config) {
        if (isCurrent(now, config)) {
            return;
        }
        long previous = windowStart;
        double unspent = local;
        windowMillis = config.window().toMillis();
        windowStart = windowStartOf(now, windowMillis);
        local = 0;
        sharedSpent = 0;
        exhausted = false;
        if (previous != Long.MIN_VALUE && unspent > 0) {
            try {
                act("return the unspent chunk", () -> store.release(name, previous, unspent));
            } catch (SpendStoreUnavailableException ex) {
                // The window is over: what stays reserved in it costs the fleet nothing.
            }
        }
        try {
            long before = windowStart - WINDOWS_KEPT * windowMillis;
            act("forget old windows", () -> store.forgetBefore(name, before));
        } catch (SpendStoreUnavailableException ex) {
            // Old rows only take room; the next roll tries again.
        }
    }

    @Override
    public @Nullable Reservation tryReserve(Instant now, double cost, BudgetConfig config) {
        roll(now, config);
        if (cost <= local) {
            local -= cost;
            return new Held(windowStart, cost);
        }
        ensureRegistered(config);
        chargePending();
        double need = cost - local;
        double chunk = Math.max(config.chunkSize(), need);
        long window = windowStart;
        if (call("reserve a chunk", () -> store.tryReserve(name, window, chunk))) {
            return take(chunk, cost);
        }
        // The window cannot give a whole chunk: take what is left, if the call fits in it.
        for (int attempt = 0; attempt < 3; attempt++) {
            SpendStore.WindowState state = call("read the window", () -> store.read(name, window));
            fleetLimit = state.limit();
            sharedSpent = state.spent();
            double available = state.remaining();
            if (available < need) {
                if (local + available < config.costPerCall() || cost <= config.costPerCall()) {
                    markExhausted(now);
                }
                return null;
            }
            double rest = Math.min(available, chunk);
            if (call("reserve the rest", () -> store.tryReserve(name, window, rest))) {
                return take(rest, cost);
            }
            // Another instance took some meanwhile: read again.
        }
        markExhausted(now);
        return null;
    }

    private Reservation take(double reserved, double cost) {
        sharedSpent += reserved;
        local += reserved - cost;
        exhausted = false;
        return new Held(windowStart, cost);
    }

    private void markExhausted(Instant now) {
        exhausted = true;
        nextRecheck = now.toEpochMilli() + Math.min(RECHECK_MILLIS, Math.max(1, windowMillis / 4));
    }

    @Override
    public void setCost(Reservation reservation, double cost, Instant now, BudgetConfig config) {
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
            pendingCharges.merge(held.window, charge, Double::sum);
            if (current) {
                sharedSpent += charge;
            }
            try {
                chargePending();
            } catch (SpendStoreUnavailableException ex) {
                // Kept in pendingCharges: charged on the next round trip that succeeds.
            }
        }
    }

    private void chargePending() {
        while (!pendingCharges.isEmpty()) {
            Map.Entry<Long, Double> next = pendingCharges.entrySet().iterator().next();
            long window = next.getKey();
            double amount = next.getValue();
            act("charge a recorded cost", () -> store.charge(name, window, amount));
            pendingCharges.remove(window);
        }
    }

    @Override
    public void release(Reservation reservation, Instant now, BudgetConfig config) {
        Held held = (Held) reservation;
        if (held.window == windowStart && isCurrent(now, config)) {
            local += held.cost;
        }
    }

    @Override
    public double total(Instant now, BudgetConfig config) {
        return isCurrent(now, config) ? Math.max(0, sharedSpent - local) : 0;
    }

    @Override
    public boolean full(Instant now, BudgetConfig config) {
        if (!isCurrent(now, config)) {
            return false;
        }
        if (!exhausted || local >= config.costPerCall()) {
            return false;
        }
        if (now.toEpochMilli() >= nextRecheck) {
            try {
                long window = windowStart;
                SpendStore.WindowState state = call("read the window", () -> store.read(name, window));
                fleetLimit = state.limit();
                sharedSpent = state.spent();
                if (local + state.remaining() >= config.costPerCall()) {
                    exhausted = false;
                    return false;
                }
            } catch (SpendStoreUnavailableException ex) {
                // Still closed: the next refresh asks again.
            }
            markExhausted(now);
        }
        return true;
    }

    @Override
    public Instant roomAt(Instant now, BudgetConfig config) {
        long millis = config.window().toMillis();
        return Instant.ofEpochMilli(windowStartOf(now, millis) + millis);
    }

    @Override
    public @Nullable Instant roomAt(Instant now, BudgetConfig config, double cost) {
        return cost <= limit(config) ? roomAt(now, config) : null;
    }

    @Override
    public double limit(BudgetConfig config) {
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
        fleetLimit = newConfig.limit();
        exhausted = false;
    }

    @Override
    public void close() {
        if (local <= 0 || windowStart == Long.MIN_VALUE) {
            return;
        }
        double unspent = local;
        long window = windowStart;
        local = 0;
        try {
            act("return the unspent chunk", () -> store.release(name, window, unspent));
            log.info("Budget '{}' (fleet): returned {} unspent to the shared window", name, unspent);
        } catch (SpendStoreUnavailableException ex) {
            // Logged; it expires with its window.
        }
        try {
            chargePending();
        } catch (SpendStoreUnavailableException ex) {
            log.warn(
                    "Budget '{}' (fleet): recorded costs {} could not be charged before shutdown",
                    name,
                    pendingCharges);
        }
    }

    /** Unspent chunk held by this instance in the current window (for tests and the gauge). */
    double localChunk() {
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
