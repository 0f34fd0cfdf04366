package io.sumi.budget;

import io.github.resilience4j.circuitbreaker.CircuitBreaker;
import io.github.resilience4j.circuitbreaker.CircuitBreakerConfig;
import io.micrometer.core.instrument.MeterRegistry;
import io.sumi.budget.BudgetExhaustedException.Reason;
import java.time.Clock;
import java.time.Instant;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.function.ToDoubleFunction;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A budget: a {@link SpendAccount} (this JVM's sliding window, or the fleet's shared windows) and
 * a Resilience4j breaker.
 *
 * <p>Concurrency: every step that reads or changes the window or may move the breaker (acquire,
 * the end of a permit, a recorded cost, refresh, reconfiguration) runs synchronized on the budget,
 * so the breaker's transition events, which Resilience4j publishes on the thread that caused them,
 * are handled while the budget is consistent, and "would the next call exceed the limit" and
 * "reserve its cost" are one step: two threads can never both take the last unit. Listeners are
 * called under that lock too; they must not block. No round trip to a shared spend store is made
 * under that lock ({@link SpendAccount#fetch}, {@link SpendAccount#refreshFromStore} and
 * {@link SpendAccount#flush} run outside it): an acquire that needs the store gives the lock up,
 * asks the store (one thread of the instance at a time), then takes the lock again and reserves
 * from what the store gave, so a call this instance can serve from its chunk never waits on
 * another call's round trip. (Changing a fleet budget's limit, an operator's act, still writes the
 * store under the lock.)
 *
 * <p>Opening for the limit uses {@code transitionToOpenStateUntil(roomAt)}: the breaker's own clock
 * (the budget's) then half-opens it once enough spend has left the window, on the next permission
 * asked; {@link #refresh()} does the same for callers that only watch (the Kafka binder).
 */
final class DefaultBudget implements Budget {

    private static final Logger log = LoggerFactory.getLogger(Budget.class);

    private final String name;
    private final Clock clock;
    private final DefaultBudgetRegistry registry;
    private final CircuitBreaker breaker;
    private final SpendAccount spend;
    private final BudgetMetrics metrics;
    private volatile BudgetConfig config;

    // Guarded by this.
    private @Nullable Reason pendingOpenReason;
    private Reason openReason = Reason.LIMIT_REACHED;
    private @Nullable Instant openUntil;
    private int inFlight;

    DefaultBudget(
            String name,
            BudgetConfig config,
            Clock clock,
            DefaultBudgetRegistry registry,
            MeterRegistry meterRegistry,
            SpendAccount spend) {
        this.name = name;
        this.spend = spend;
        this.config = config;
        this.clock = clock;
        this.registry = registry;
        this.breaker = CircuitBreaker.of(name, breakerConfig(config));
        this.breaker
                .getEventPublisher()
                .onStateTransition(event -> onTransition(
                        event.getStateTransition().getFromState(),
                        event.getStateTransition().getToState()));
        this.metrics = new BudgetMetrics(this, meterRegistry);
    }

    private CircuitBreakerConfig breakerConfig(BudgetConfig config) {
        return CircuitBreakerConfig.custom()
                .slidingWindowType(CircuitBreakerConfig.SlidingWindowType.COUNT_BASED)
                .slidingWindowSize(config.slidingWindowSize())
                .minimumNumberOfCalls(config.minimumNumberOfCalls())
                .failureRateThreshold(config.failureRateThreshold())
                .waitDurationInOpenState(config.waitDurationInOpenState())
                .permittedNumberOfCallsInHalfOpenState(config.permittedCallsInHalfOpenState())
                // A refusal by the budget itself is never a failure of the provider.
                .recordException(failure -> !(failure instanceof BudgetExhaustedException)
                        && this.config.recordFailure().test(failure))
                .automaticTransitionFromOpenToHalfOpenEnabled(false)
                .clock(clock)
                .build();
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public BudgetConfig config() {
        return config;
    }

    @Override
    public CircuitBreaker circuitBreaker() {
        return breaker;
    }

    @Override
    public BudgetPermit acquire() {
        return acquire(config.costPerCall());
    }

    /** Rounds of "ask the store, then take what it gave" before an acquire gives up to other threads. */
    private static final int ACQUIRE_ROUNDS = 8;

    @Override
    public BudgetPermit acquire(double cost) {
        if (!(cost >= 0) || Double.isInfinite(cost)) {
            throw new IllegalArgumentException("A cost must be a finite number >= 0, was " + cost);
        }
        BudgetConfig current = config;
        // Round trips happen here, outside the lock: a call that this instance can serve from what
        // it holds is never held up by another call waiting on the shared store.
        spend.refreshFromStore(current);
        for (int round = 0; ; round++) {
            synchronized (this) {
                Instant now = clock.instant();
                refreshLocked(now);
                current = config;
                if (spend.full(now, current)) {
                    openForLimit(now, current);
                    metrics.rejected();
                    throw exhausted(Reason.LIMIT_REACHED, spend.total(now, current), current);
                }
                if (!breaker.tryAcquirePermission()) {
                    metrics.rejected();
                    throw exhausted(Reason.CIRCUIT_OPEN, spend.total(now, current), current);
                }
                // Judged at this instant (read after the breaker's own clock reads): the window it is charged to.
                now = clock.instant();
                SpendAccount.Attempt attempt = spend.tryReserve(now, cost, current);
                SpendAccount.Reservation reservation = attempt.reservation();
                if (reservation != null) {
                    metrics.permitted();
                    inFlight++;
                    return new Permit(reservation, System.nanoTime());
                }
                breaker.releasePermission();
                if (!attempt.askStore()) {
                    throw refused(now, cost, current);
                }
                if (round >= ACQUIRE_ROUNDS) {
                    // Other threads of this instance took every chunk fetched for this call.
                    metrics.rejected();
                    throw exhausted(Reason.LIMIT_REACHED, spend.total(now, current), current);
                }
            }
            boolean fetched;
            try {
                fetched = spend.fetch(cost, current);
            } catch (SpendStoreUnavailableException ex) {
                throw storeUnavailable(ex, current);
            }
            if (!fetched) {
                synchronized (this) {
                    throw refused(clock.instant(), cost, current);
                }
            }
        }
    }

    /** Under the lock: the store did not answer (fail closed). */
    private BudgetExhaustedException storeUnavailable(SpendStoreUnavailableException ex, BudgetConfig current) {
        synchronized (this) {
            Instant now = clock.instant();
            metrics.rejected();
            openForStore(now);
            BudgetExhaustedException refused = new BudgetExhaustedException(
                    name,
                    Reason.STORE_UNAVAILABLE,
                    spend.total(now, current),
                    spend.limit(current),
                    openUntil,
                    "Budget '" + name + "' refuses the call: its shared spend store did not answer, so the spend"
                            + " cannot be reserved (fail closed); retry after " + openUntil);
            refused.initCause(ex);
            return refused;
        }
    }

    /** Under the lock: {@code cost} does not fit in the window. */
    private BudgetExhaustedException refused(Instant now, double cost, BudgetConfig current) {
        metrics.rejected();
        double spent = spend.total(now, current);
        double limit = spend.limit(current);
        if (spend.full(now, current)) {
            openForLimit(now, current);
            return exhausted(Reason.LIMIT_REACHED, spent, current);
        }
        // One call would fit, but not all the calls asked for (a batch): refuse them all, and
        // do not open the breaker, so that a smaller batch (or a single call) still can run.
        Instant fitsAt = spend.roomAt(now, current, cost);
        return new BudgetExhaustedException(
                name,
                Reason.LIMIT_REACHED,
                spent,
                limit,
                fitsAt,
                "Budget '" + name
                        + "' cannot take a batch costing " + fmt(cost) + ": spent " + fmt(spent) + " of "
                        + fmt(limit)
                        + " in the last " + current.window()
                        + (fitsAt != null
                                ? "; it fits from " + fitsAt
                                : "; the batch costs more than the whole limit: make batches smaller (e.g. max.poll.records) than"
                                        + " limit / cost-per-call"));
    }

    // The scope is a guard: try-with-resources closes it; the body never names it.
    @SuppressWarnings("try")
    @Override
    public <T> T call(Callable<T> call, @Nullable ToDoubleFunction<? super T> cost) throws Exception {
        BudgetPermit permit = acquire();
        T result;
        try (BudgetPermit.Scope scope = permit.open()) {
            result = call.call();
        } catch (Exception | Error ex) {
            permit.onError(ex);
            throw ex;
        }
        try {
            if (cost != null) {
                permit.recordCost(cost.applyAsDouble(result));
            }
        } finally {
            permit.onSuccess();
        }
        return result;
    }

    @Override
    public synchronized double spent() {
        return spend.total(clock.instant(), config);
    }

    @Override
    public synchronized double remaining() {
        return Math.max(0, spend.limit(config) - spent());
    }

    /** The limit in force: the configured one, or, for a fleet budget, the fleet's. */
    synchronized double limitInForce() {
        return spend.limit(config);
    }

    /** Gives back what this instance reserved and did not spend (registry closed). */
    synchronized void close() {
        spend.close();
    }

    /** Whether the budget counts its spend for the fleet. */
    boolean isFleet() {
        return spend instanceof FleetSpendAccount;
    }

    @Override
    public CircuitBreaker.State refresh() {
        spend.refreshFromStore(config);
        synchronized (this) {
            refreshLocked(clock.instant());
            return breaker.getState();
        }
    }

    @Override
    public synchronized int callsInFlight() {
        return inFlight;
    }

    @Override
    public synchronized Optional<Instant> retryAt() {
        return breaker.getState() == CircuitBreaker.State.OPEN ? Optional.ofNullable(openUntil) : Optional.empty();
    }

    @Override
    public Instant now() {
        return clock.instant();
    }

    @Override
    public synchronized void forceOpen() {
        log.warn("Budget '{}' forced OPEN by an operator: every call is refused until it is forced closed", name);
        breaker.transitionToForcedOpenState();
    }

    @Override
    public synchronized void forceClosed() {
        log.warn("Budget '{}' forced CLOSED by an operator (was {})", name, breaker.getState());
        // transitionToClosedState also resets the breaker's failure statistics.
        breaker.transitionToClosedState();
        openUntil = null;
        checkRoom();
    }

    @Override
    public synchronized void resetWindow() {
        log.warn(
                "Budget '{}': spend window reset by an operator (spent {} of {})",
                name,
                fmt(spent()),
                fmt(config.limit()));
        spend.resetWindow();
        if (breaker.getState() == CircuitBreaker.State.OPEN && openReason == Reason.LIMIT_REACHED) {
            breaker.transitionToHalfOpenState();
        }
    }

    /** Reconfigures the budget in place (see {@link io.sumi.budget.BudgetRegistry#update}). */
    synchronized void reconfigure(BudgetConfig newConfig) {
        BudgetConfig old = config;
        spend.limitChanged(old, newConfig);
        config = newConfig;
        if (!old.toString().equals(newConfig.toString())) {
            log.info(
                    "Budget '{}' reconfigured: limit {} per {} (was {} per {}), cost per call {}",
                    name,
                    fmt(newConfig.limit()),
                    newConfig.window(),
                    fmt(old.limit()),
                    old.window(),
                    fmt(newConfig.costPerCall()));
        }
        Instant now = clock.instant();
        boolean full = spend.full(now, newConfig);
        CircuitBreaker.State state = breaker.getState();
        if (state == CircuitBreaker.State.OPEN && openReason == Reason.LIMIT_REACHED) {
            if (full) {
                openUntil = spend.roomAt(now, newConfig);
            } else {
                breaker.transitionToHalfOpenState();
            }
        } else if (state != CircuitBreaker.State.OPEN && full) {
            openForLimit(now, newConfig);
        }
    }

    // ------------------------------------------------------------------ under the lock

    private void refreshLocked(Instant now) {
        if (breaker.getState() != CircuitBreaker.State.OPEN || openUntil == null) {
            return;
        }
        if (now.isBefore(openUntil)) {
            // A fleet budget can get room before the date: another instance gave spend back, or
            // the fleet's limit was raised elsewhere.
            if (openReason == Reason.LIMIT_REACHED && spend.roomMayAppearEarly() && !spend.full(now, config)) {
                breaker.transitionToHalfOpenState();
            }
            return;
        }
        if (openReason == Reason.LIMIT_REACHED) {
            BudgetConfig current = config;
            if (spend.full(now, current)) {
                // Costs recorded after the opening moved the date: wait on, without a new transition.
                openUntil = spend.roomAt(now, current);
                return;
            }
        }
        breaker.transitionToHalfOpenState();
    }

    /** Opens the breaker until one more call fits, or moves the date of an open one. */
    private void openForLimit(Instant now, BudgetConfig current) {
        Instant roomAt = spend.roomAt(now, current);
        if (breaker.getState() == CircuitBreaker.State.OPEN) {
            if (openReason == Reason.LIMIT_REACHED || openUntil == null || openUntil.isBefore(roomAt)) {
                openUntil = roomAt;
            }
            return;
        }
        pendingOpenReason = Reason.LIMIT_REACHED;
        openUntil = roomAt;
        breaker.transitionToOpenStateUntil(roomAt);
    }

    /** After a call ended or a cost was recorded: open at once if no further call fits. */
    private void checkRoom() {
        Instant now = clock.instant();
        BudgetConfig current = config;
        if (spend.full(now, current)) {
            openForLimit(now, current);
        }
    }

    /** How long a budget whose shared store failed stays open before a probe call asks the store again. */
    static final java.time.Duration STORE_RETRY_DELAY = java.time.Duration.ofSeconds(1);

    /** Opens the breaker for {@link #STORE_RETRY_DELAY}: the shared store failed (fail closed). */
    private void openForStore(Instant now) {
        Instant retryAt = now.plus(STORE_RETRY_DELAY);
        if (breaker.getState() == CircuitBreaker.State.OPEN) {
            openUntil = retryAt;
            openReason = Reason.STORE_UNAVAILABLE;
            return;
        }
        pendingOpenReason = Reason.STORE_UNAVAILABLE;
        openUntil = retryAt;
        breaker.transitionToOpenStateUntil(retryAt);
    }

    private void onTransition(CircuitBreaker.State from, CircuitBreaker.State to) {
        // Runs on the thread that moved the breaker, which holds the budget's lock, except when
        // Resilience4j half-opens by itself inside tryAcquirePermission (also under the lock, in acquire).
        synchronized (this) {
            BudgetConfig current = config;
            double spent = spend.total(clock.instant(), current);
            if (to == CircuitBreaker.State.OPEN) {
                Reason reason = pendingOpenReason != null ? pendingOpenReason : Reason.CIRCUIT_OPEN;
                pendingOpenReason = null;
                openReason = reason;
                if (reason == Reason.CIRCUIT_OPEN) {
                    openUntil = clock.instant().plus(current.waitDurationInOpenState());
                    log.warn(
                            "Budget '{}' circuit OPEN ({} -> OPEN): {}% of the last calls failed (threshold {}%); calls fail fast"
                                    + " until {}, then {} probe call(s) decide",
                            name,
                            from,
                            fmt(breaker.getMetrics().getFailureRate()),
                            fmt(current.failureRateThreshold()),
                            openUntil,
                            current.permittedCallsInHalfOpenState());
                } else if (reason == Reason.STORE_UNAVAILABLE) {
                    log.error(
                            "Budget '{}' REFUSING calls ({} -> OPEN): its shared spend store does not answer; no paid call"
                                    + " is made without a reservation (fail closed); a probe call asks again at {}",
                            name,
                            from,
                            openUntil);
                } else {
                    log.warn(
                            "Budget '{}' EXHAUSTED ({} -> OPEN): spent {} of {} in the last {}; calls fail fast until {}, when"
                                    + " enough spend has left the window",
                            name,
                            from,
                            fmt(spent),
                            fmt(spend.limit(current)),
                            current.window(),
                            openUntil);
                }
                metrics.opened(reason);
            } else if (to == CircuitBreaker.State.HALF_OPEN) {
                openUntil = null;
                log.info(
                        "Budget '{}' HALF_OPEN ({} -> HALF_OPEN): spent {} of {}; {} probe call(s) decide whether it closes",
                        name,
                        from,
                        fmt(spent),
                        fmt(current.limit()),
                        current.permittedCallsInHalfOpenState());
            } else if (to == CircuitBreaker.State.CLOSED) {
                openUntil = null;
                log.info(
                        "Budget '{}' CLOSED ({} -> CLOSED): calls flow again; spent {} of {}",
                        name,
                        from,
                        fmt(spent),
                        fmt(current.limit()));
            } else {
                log.info("Budget '{}' {} -> {}", name, from, to);
            }
        }
        registry.fire(this, from, to);
    }

    private BudgetExhaustedException exhausted(Reason reason, double spent, BudgetConfig current) {
        Instant retryAt = breaker.getState() == CircuitBreaker.State.OPEN ? openUntil : null;
        double limit = spend.limit(current);
        String text = reason == Reason.LIMIT_REACHED
                ? "Budget '" + name + "' is exhausted: spent " + fmt(spent) + " of " + fmt(limit)
                        + " in the last " + current.window() + " (a call costs " + fmt(current.costPerCall())
                        + "); retry after " + retryAt
                : "Budget '" + name + "' does not permit a call: its circuit is " + breaker.getState()
                        + (retryAt != null ? " until " + retryAt : " (a probe call is running)");
        return new BudgetExhaustedException(name, reason, spent, limit, retryAt, text);
    }

    private static String fmt(double value) {
        return value == Math.rint(value) && Math.abs(value) < 1e15
                ? Long.toString((long) value)
                : String.format("%.2f", value);
    }

    @Override
    public String toString() {
        return "Budget[" + name + ", " + breaker.getState() + ", " + config + "]";
    }

    /** One call's permission and reserved cost. */
    private final class Permit implements BudgetPermit {

        private final SpendAccount.Reservation entry;
        private final long start;
        private boolean ended; // guarded by the budget

        Permit(SpendAccount.Reservation entry, long start) {
            this.entry = entry;
            this.start = start;
        }

        @Override
        public Budget budget() {
            return DefaultBudget.this;
        }

        @Override
        public void recordCost(double cost) {
            check(cost);
            synchronized (DefaultBudget.this) {
                spend.setCost(entry, cost, clock.instant(), config);
                checkRoom();
            }
            spend.flush();
        }

        @Override
        public void addCost(double cost) {
            check(cost);
            synchronized (DefaultBudget.this) {
                spend.setCost(entry, entry.cost() + cost, clock.instant(), config);
                checkRoom();
            }
            spend.flush();
        }

        @Override
        public double cost() {
            synchronized (DefaultBudget.this) {
                return entry.cost();
            }
        }

        private void check(double cost) {
            if (!(cost >= 0) || Double.isInfinite(cost)) {
                throw new IllegalArgumentException("A cost must be a finite number >= 0, was " + cost);
            }
        }

        @Override
        public void onSuccess() {
            synchronized (DefaultBudget.this) {
                if (ended) {
                    return;
                }
                ended = true;
                inFlight--;
                breaker.onSuccess(System.nanoTime() - start, TimeUnit.NANOSECONDS);
                checkRoom();
            }
        }

        @Override
        public void onError(Throwable failure) {
            synchronized (DefaultBudget.this) {
                if (ended) {
                    return;
                }
                ended = true;
                inFlight--;
                breaker.onError(System.nanoTime() - start, TimeUnit.NANOSECONDS, failure);
                checkRoom();
            }
        }

        @Override
        public void release() {
            synchronized (DefaultBudget.this) {
                if (ended) {
                    return;
                }
                ended = true;
                inFlight--;
                spend.release(entry, clock.instant(), config);
                breaker.releasePermission();
            }
        }
    }
}
