package io.sumi.budget;

import io.github.resilience4j.circuitbreaker.CircuitBreaker;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import io.sumi.consumer.binder.ListenerPauser;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Pauses the listeners of a budget while the budget cannot take calls, and resumes them when its
 * breaker half-opens or closes: a spent budget costs no loop of refused redeliveries and
 * dead-letters nothing. The one implementation of that rule; each binder subclasses it for its
 * listener type (a Kafka container, a RabbitMQ or JMS container, a Spring Cloud Stream binding)
 * and says only how to pause, resume and name one.
 *
 * <p>Design notes. A listener is paused by {@link #pause(Object, BudgetExhaustedException)} (a
 * refusal) or {@link #pause(Object, String)} (its budget is open). It is resumed by the check every
 * {@code checkInterval} and by every state transition of the budget, when the breaker is
 * {@code HALF_OPEN} or {@code CLOSED}; the first message it delivers is then the probe call that
 * decides whether the breaker closes.
 * <ul>
 *   <li>A listener paused while the breaker was already half-open (its probe was running
 *   elsewhere) waits until the breaker closes, half-opens again, or no call runs any more (the
 *   probe was given back undecided: a duplicate or a busy key), so that some listener makes the
 *   probe.</li>
 *   <li>A refusal that left the breaker closed (a batch whose cost does not fit while a single call
 *   would) keeps its listener paused until the refusal's {@link BudgetExhaustedException#retryAt()
 *   retryAt} on the budget's clock, or until the budget transitions or its limit is changed; else
 *   it would be resumed at once and refused again in a busy loop.</li>
 *   <li>Concurrency: budget transitions call this pauser under the budget's lock, so it never calls
 *   a budget under a lock of its own. Its one lock covers only the record of a pause together with
 *   the pause (or resume) request: a resume in between would otherwise drop the record before the
 *   request and leave the listener paused with nothing to resume it.</li>
 * </ul>
 *
 * <p>Metrics, the same for every binder: counters {@code sumi.budget.pauses} and
 * {@code sumi.budget.resumes} (tags {@code budget}, {@code listener}: the listener's
 * {@linkplain #id id}). Thread-safe.
 *
 * @param <L> the listener type (a container, a binding name)
 * @since 0.1.0
 */
public abstract class BudgetPauser<L> implements ListenerPauser<L> {

    private static final Logger log = LoggerFactory.getLogger(BudgetPauser.class);

    /** The default period of the resume check. */
    public static final Duration DEFAULT_CHECK_INTERVAL = Duration.ofSeconds(1);

    /**
     * A paused listener: its budget; the number of half-openings of that budget seen when it was
     * paused, if it was paused while the budget was half-open, else -1; for a refusal that left the
     * breaker closed, the time it fits ({@code notBefore}, on the budget's clock) and the limit it
     * was refused under.
     */
    private record Paused(
            String budget,
            long halfOpenedWhilePaused,
            @Nullable Instant notBefore,
            double limit) {}

    private final BudgetRegistry budgets;
    private final PeriodicCheck checks;
    private final MeterRegistry meterRegistry;
    private final Map<L, Paused> paused = new ConcurrentHashMap<>();
    /** Held only around a change of {@link #paused} and the pause or resume request; never while calling a budget. */
    private final Object pauseLock = new Object();

    private final Map<String, AtomicLong> pauses = new ConcurrentHashMap<>();
    private final Map<String, AtomicLong> resumes = new ConcurrentHashMap<>();
    private final Map<String, AtomicLong> halfOpenings = new ConcurrentHashMap<>();

    /**
     * @param threadName the name of the pauser's thread (e.g. {@code sumi-rabbit-budget-stopper})
     * @param checkInterval the period of the resume check (positive)
     */
    protected BudgetPauser(
            BudgetRegistry budgets, Duration checkInterval, @Nullable MeterRegistry meterRegistry, String threadName) {
        this.budgets = Objects.requireNonNull(budgets, "budgets");
        this.checks = new PeriodicCheck(Objects.requireNonNull(threadName, "threadName"), checkInterval, this::check);
        this.meterRegistry = meterRegistry != null ? meterRegistry : new CompositeMeterRegistry();
        budgets.addListener((budget, from, to) -> {
            if (to == CircuitBreaker.State.HALF_OPEN) {
                halfOpenings(budget.name()).incrementAndGet();
            }
            if (to == CircuitBreaker.State.HALF_OPEN || to == CircuitBreaker.State.CLOSED) {
                resumeReady(budget, to, true);
            }
        });
    }

    /**
     * Requests that {@code listener} stop delivering. Called under this pauser's lock, possibly on
     * the listener's own consumer thread: it must not block (a container that waits for its
     * consumer threads to stop is stopped {@linkplain #runInBackground in the background}).
     */
    protected abstract void pauseListener(L listener);

    /** Requests that {@code listener} deliver again. Called under this pauser's lock; must not block. */
    protected abstract void resumeListener(L listener);

    /**
     * Whether {@code listener} can be resumed now; {@code false} defers the resume to the next
     * check (a container that is still stopping). {@code true} by default.
     */
    protected boolean canResume(L listener) {
        return true;
    }

    /** The listener this pauser pauses for {@code listener} (a concurrent container for its child); itself by default. */
    protected L target(L listener) {
        return listener;
    }

    /** The listener's id, for the {@code listener} tag of the meters. */
    protected abstract String id(L listener);

    /** Names {@code listener} in log messages (its kind and id, its queues). */
    protected abstract String describe(L listener);

    /** Runs {@code task} on the pauser's thread (never the caller's). */
    protected final void runInBackground(Runnable task) {
        checks.runInBackground(task);
    }

    /** Pauses {@code listener} until the refusing budget can take calls again. */
    public void pause(L listener, BudgetExhaustedException refusal) {
        pause(target(listener), refusal.budget(), refusal);
    }

    /**
     * Pauses {@code listener} for the budget refusal in {@code failure}'s cause chain, if there is
     * one: for a binder that classifies what it caught by {@link
     * io.sumi.consumer.exception.Verdict} and so names no budget type where budgets are optional.
     *
     * @return whether there was a refusal to pause for
     * @since 0.1.0
     */
    @Override
    public boolean pauseFor(L listener, @Nullable Throwable failure) {
        BudgetExhaustedException refusal =
                BudgetExhaustedException.find(failure).orElse(null);
        if (refusal == null) {
            return false;
        }
        pause(listener, refusal);
        return true;
    }

    /** Pauses {@code listener} until {@code budget} can take calls again (its breaker is open). */
    public void pause(L listener, String budget) {
        pause(target(listener), budget, null);
    }

    private void pause(L target, String budgetName, @Nullable BudgetExhaustedException refusal) {
        Budget budget = budgets.find(budgetName).orElse(null);
        // Read the count before the state: a half-opening in between then resumes us at once,
        // instead of leaving us waiting for a probe that only we could make.
        long halfOpened = halfOpenings(budgetName).get();
        CircuitBreaker.State state = budget != null ? budget.refresh() : CircuitBreaker.State.OPEN;
        Instant notBefore = state == CircuitBreaker.State.CLOSED && refusal != null
                ? refusal.retryAt().orElse(null)
                : null;
        double limit = refusal != null
                ? refusal.limit()
                : budget != null ? budget.config().limit() : 0;
        Paused entry =
                new Paused(budgetName, state == CircuitBreaker.State.HALF_OPEN ? halfOpened : -1, notBefore, limit);
        boolean first;
        synchronized (pauseLock) {
            first = paused.putIfAbsent(target, entry) == null;
            if (first) {
                pauseListener(target);
            }
        }
        if (first) {
            pauses.computeIfAbsent(budgetName, b -> new AtomicLong()).incrementAndGet();
            counter("sumi.budget.pauses", budgetName, target).increment();
            log.warn(
                    "Paused {}: budget '{}' {}; {}",
                    describe(target),
                    budgetName,
                    refusal != null ? "refused a call (" + refusal.reason() + ")" : "is " + state,
                    notBefore != null
                            ? "resuming when the batch fits, at " + notBefore
                            : "resuming when it half-opens"
                                    + (refusal != null
                                            ? refusal.retryAt()
                                                    .map(at -> ", due " + at)
                                                    .orElse("")
                                            : ""));
        }
        // A budget that moved on while we paused (another thread's probe closed it) must not strand us.
        if (budget != null) {
            resumeReady(budget, budget.circuitBreaker().getState(), false);
        }
    }

    /** Applies due budget transitions and resumes the listeners whose budget can take calls. */
    public void check() {
        for (Paused entry : paused.values()) {
            budgets.find(entry.budget()).ifPresent(budget -> resumeReady(budget, budget.refresh(), false));
        }
    }

    /**
     * @param transition whether a state transition of the budget called: it ends the wait for a
     *     refused batch's {@code retryAt} too (the budget changed under it: e.g. it was reopened
     *     and half-opened), at the cost of at most one more refusal per transition
     */
    private void resumeReady(Budget target, CircuitBreaker.State state, boolean transition) {
        if (state != CircuitBreaker.State.HALF_OPEN && state != CircuitBreaker.State.CLOSED) {
            return;
        }
        String budget = target.name();
        long halfOpened = halfOpenings(budget).get();
        paused.forEach((listener, entry) -> {
            if (!entry.budget().equals(budget)) {
                return;
            }
            if (entry.notBefore() != null
                    && !transition
                    && target.now().isBefore(entry.notBefore())
                    && target.config().limit() == entry.limit()) {
                return;
            }
            boolean ready = state == CircuitBreaker.State.CLOSED
                    || entry.halfOpenedWhilePaused() < 0
                    || halfOpened > entry.halfOpenedWhilePaused()
                    || target.callsInFlight() == 0;
            if (ready && resume(listener, entry)) {
                resumes.computeIfAbsent(budget, b -> new AtomicLong()).incrementAndGet();
                counter("sumi.budget.resumes", budget, listener).increment();
                log.info("Resumed {}: budget '{}' is {}", describe(listener), budget, state);
            }
        });
    }

    /** Forgets the pause and resumes the listener as one step (see {@link #pause}); false if it was resumed already or cannot be yet. */
    // Identity on purpose: only the very pause this resume was scheduled for may be ended by it.
    @SuppressWarnings("ReferenceEquality")
    private boolean resume(L listener, Paused entry) {
        synchronized (pauseLock) {
            if (paused.get(listener) != entry || !canResume(listener)) {
                return false;
            }
            paused.remove(listener, entry);
            resumeListener(listener);
            return true;
        }
    }

    private AtomicLong halfOpenings(String budget) {
        return halfOpenings.computeIfAbsent(budget, b -> new AtomicLong());
    }

    /** Whether {@code listener} (or its {@linkplain #target target}) is paused by this pauser. */
    @Override
    public boolean isPaused(L listener) {
        return paused.containsKey(target(listener));
    }

    /** How many times a listener was paused for {@code budget} (also the counter {@code sumi.budget.pauses}). */
    public long pauses(String budget) {
        AtomicLong count = pauses.get(budget);
        return count == null ? 0 : count.get();
    }

    /** How many times a listener paused for {@code budget} was resumed (also {@code sumi.budget.resumes}). */
    public long resumes(String budget) {
        AtomicLong count = resumes.get(budget);
        return count == null ? 0 : count.get();
    }

    private Counter counter(String name, String budget, L listener) {
        return Counter.builder(name)
                .description("Listeners paused, or resumed, for a budget that could not take calls")
                .tag("budget", budget)
                .tag("listener", id(listener))
                .register(meterRegistry);
    }

    /** Starts the periodic resume check. */
    public void start() {
        checks.start();
    }

    /** Stops the resume check (paused listeners stay paused). */
    public void stop() {
        checks.stop();
    }

    /** Whether the resume check runs. */
    public boolean isRunning() {
        return checks.isRunning();
    }
}
