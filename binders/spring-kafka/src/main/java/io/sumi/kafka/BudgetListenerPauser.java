package io.sumi.kafka;

import io.github.resilience4j.circuitbreaker.CircuitBreaker;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import io.sumi.consumer.budget.Budget;
import io.sumi.consumer.budget.BudgetExhaustedException;
import io.sumi.consumer.budget.BudgetRegistry;
import io.sumi.consumer.budget.internal.PeriodicCheck;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;
import org.springframework.kafka.listener.AbstractMessageListenerContainer;
import org.springframework.kafka.listener.CommonErrorHandler;
import org.springframework.kafka.listener.ConcurrentMessageListenerContainer;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.kafka.listener.ListenerContainerRegistry;
import org.springframework.kafka.listener.MessageListenerContainer;

/**
 * Pauses Kafka listener containers while the budget their handler is bound to is exhausted, and
 * resumes them when the budget's breaker half-opens, so a spent budget costs no hot loop of refused
 * retries and dead-letters nothing.
 *
 * <p>How: on start (before the listener containers start) it wraps the error handler of every
 * container in the {@link ListenerContainerRegistry} in a {@link BudgetAwareErrorHandler}. When a
 * record fails with a {@link BudgetExhaustedException}, that handler seeks the record and the rest
 * of the poll back (nothing is acknowledged, the error handler's retry count is untouched) and
 * calls {@link #pause}: the container (the whole concurrent container, not just the child) is
 * paused. A check every {@code checkInterval}, and every state transition of a budget, resumes the
 * containers of a budget whose breaker is {@code HALF_OPEN} or {@code CLOSED}; the first record
 * they deliver is the probe call that decides whether the breaker closes. A batch refused while the
 * breaker stays {@code CLOSED} (its cost × size does not fit, a single call would) keeps its
 * container paused until the refusal's {@link BudgetExhaustedException#retryAt() retryAt} on the
 * budget's clock (or the budget transitions, or its limit is changed), so it is not redelivered and
 * refused in a busy loop. A container paused while
 * the breaker was already half-open (its probe was still running elsewhere) waits for {@code CLOSED}
 * or for the next half-opening.
 *
 * <p>Containers created after start are not wrapped; wrap their error handlers with
 * {@link #errorHandler(CommonErrorHandler)}. Thread-safe. Budget transitions call it under the
 * budget's lock, so it never calls a budget under a lock of its own: its one lock covers only the
 * record of a pause together with the container's pause (or resume) request.
 */
public class BudgetListenerPauser implements SmartLifecycle {

    private static final Logger log = LoggerFactory.getLogger(BudgetListenerPauser.class);

    /** The default period of the resume check. */
    public static final Duration DEFAULT_CHECK_INTERVAL = Duration.ofSeconds(1);

    /**
     * A paused container: its budget, and the number of half-openings of that budget seen when it
     * was paused if it was paused while the budget was half-open (its probe running elsewhere),
     * else -1; for a refusal that left the breaker closed (a batch that does not fit while a
     * single call would), the time it fits ({@code notBefore}, on the budget's clock) and the
     * limit it was refused under.
     */
    private record Paused(
            String budget,
            long halfOpenedWhilePaused,
            @Nullable Instant notBefore,
            double limit) {}

    private final BudgetRegistry budgets;
    private final Supplier<@Nullable ListenerContainerRegistry> containerLookup;
    private volatile @Nullable ListenerContainerRegistry containers;
    private final PeriodicCheck checks;
    private final MeterRegistry meterRegistry;
    private final Map<MessageListenerContainer, Paused> paused = new ConcurrentHashMap<>();
    /** Held only around a change of {@link #paused} and the container's pause or resume request; never while calling a budget. */
    private final Object pauseLock = new Object();

    private final Map<String, Counter> pauseCounters = new ConcurrentHashMap<>();
    private final Map<String, Counter> resumeCounters = new ConcurrentHashMap<>();
    private final Map<String, AtomicLong> pauses = new ConcurrentHashMap<>();
    private final Map<String, AtomicLong> resumes = new ConcurrentHashMap<>();
    private final Map<String, AtomicLong> halfOpenings = new ConcurrentHashMap<>();

    /**
     * @param containers the containers whose error handlers are wrapped on start, or {@code null}
     *     to wrap none (then wrap them with {@link #errorHandler})
     */
    public BudgetListenerPauser(
            BudgetRegistry budgets,
            @Nullable ListenerContainerRegistry containers,
            Duration checkInterval,
            @Nullable MeterRegistry meterRegistry) {
        this(budgets, () -> containers, checkInterval, meterRegistry);
    }

    /**
     * A pauser that looks the registry up when it starts. Use this one for a bean: a bean that takes
     * the registry as a dependency is started after it by Spring's lifecycle processor (dependencies
     * first, whatever the phase), when the containers have already copied their error handlers.
     *
     * @param containers supplies the containers whose error handlers are wrapped on start, or
     *     {@code null} to wrap none
     */
    public BudgetListenerPauser(
            BudgetRegistry budgets,
            Supplier<@Nullable ListenerContainerRegistry> containers,
            Duration checkInterval,
            @Nullable MeterRegistry meterRegistry) {
        this.budgets = Objects.requireNonNull(budgets, "budgets");
        this.containerLookup = Objects.requireNonNull(containers, "containers");
        this.checks = new PeriodicCheck("sumi-budget-pauser", checkInterval, this::check);
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
     * An error handler that gives budget refusals to this pauser and everything else to
     * {@code delegate}; without a delegate, a {@code DefaultErrorHandler} taught Sumi's exceptions
     * ({@link SumiKafkaErrorHandling}).
     */
    public CommonErrorHandler errorHandler(@Nullable CommonErrorHandler delegate) {
        if (delegate instanceof BudgetAwareErrorHandler aware && aware.pauser() == this) {
            return delegate;
        }
        // No handler: Spring Kafka's default would retry a busy key 10 times at once and then skip it;
        // Sumi's classification keeps busy keys (and budget refusals that reach it) retried.
        return new BudgetAwareErrorHandler(
                delegate != null
                        ? delegate
                        : SumiKafkaErrorHandling.configure(
                                new DefaultErrorHandler(), SumiKafkaErrorHandling.DEFAULT_BUSY_INTERVAL),
                this);
    }

    /**
     * Pauses {@code container} (its parent, for a child of a concurrent container) until the
     * refusing budget can take calls again.
     */
    public void pause(MessageListenerContainer container, BudgetExhaustedException refusal) {
        MessageListenerContainer target = topLevel(container);
        Budget budget = budgets.find(refusal.budget()).orElse(null);
        // Read the count before the state: a half-opening in between then resumes us at once,
        // instead of leaving us waiting for a probe that only we could make.
        long halfOpened = halfOpenings(refusal.budget()).get();
        CircuitBreaker.State state = budget != null ? budget.refresh() : CircuitBreaker.State.OPEN;
        // A batch that does not fit leaves the breaker CLOSED (a single call would still fit): without
        // waiting for its retryAt the container would resume at once and the batch be refused again
        // and again until the window frees (a busy loop).
        Instant notBefore =
                state == CircuitBreaker.State.CLOSED ? refusal.retryAt().orElse(null) : null;
        Paused entry = new Paused(
                refusal.budget(),
                state == CircuitBreaker.State.HALF_OPEN ? halfOpened : -1,
                notBefore,
                refusal.limit());
        boolean first;
        // Recorded and requested as one step: a resume in between (the check, or a transition of the
        // budget on another thread) would otherwise run before the request and drop the record, and
        // the request would then leave the container paused with nothing to resume it.
        synchronized (pauseLock) {
            first = paused.putIfAbsent(target, entry) == null;
            if (first) {
                target.pause();
            }
        }
        if (first) {
            pauses.computeIfAbsent(refusal.budget(), b -> new AtomicLong()).incrementAndGet();
            counter(pauseCounters, "sumi.budget.pauses", refusal.budget()).increment();
            log.warn(
                    "Paused Kafka listener container '{}': budget '{}' refused a call ({}); {}",
                    target.getListenerId(),
                    refusal.budget(),
                    refusal.reason(),
                    notBefore != null
                            ? "resuming when the batch fits, at " + notBefore
                            : "resuming when it half-opens"
                                    + refusal.retryAt().map(at -> ", due " + at).orElse(""));
        }
        // A budget that moved on while we paused (another thread's probe closed it) must not strand us.
        if (budget != null) {
            resumeReady(budget, budget.circuitBreaker().getState(), false);
        }
    }

    /** Applies due budget transitions and resumes containers whose budget can take calls. */
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
        paused.forEach((container, entry) -> {
            // A refused batch waits until it fits (the window frees its retryAt), unless the budget
            // transitioned or an operator changed its limit meanwhile.
            if (entry.budget().equals(budget)
                    && entry.notBefore() != null
                    && !transition
                    && target.now().isBefore(entry.notBefore())
                    && target.config().limit() == entry.limit()) {
                return;
            }
            // Paused while half-open: the probe ran elsewhere; wait until it closed the breaker, or
            // the breaker half-opened again (the probe failed, the breaker reopened and its wait
            // ended), or no call is running any more (the probe was given back undecided: its
            // message was a duplicate or busy), so that some container can make the probe.
            boolean ready = state == CircuitBreaker.State.CLOSED
                    || entry.halfOpenedWhilePaused() < 0
                    || halfOpened > entry.halfOpenedWhilePaused()
                    || target.callsInFlight() == 0;
            if (entry.budget().equals(budget) && ready && resume(container, entry)) {
                resumes.computeIfAbsent(budget, b -> new AtomicLong()).incrementAndGet();
                counter(resumeCounters, "sumi.budget.resumes", budget).increment();
                log.info(
                        "Resumed Kafka listener container '{}': budget '{}' is {}",
                        container.getListenerId(),
                        budget,
                        state);
            }
        });
    }

    /** Forgets the pause and resumes the container as one step (see {@link #pause}); false if it was resumed already. */
    private boolean resume(MessageListenerContainer container, Paused entry) {
        synchronized (pauseLock) {
            if (!paused.remove(container, entry)) {
                return false;
            }
            container.resume();
            return true;
        }
    }

    private AtomicLong halfOpenings(String budget) {
        return halfOpenings.computeIfAbsent(budget, b -> new AtomicLong());
    }

    /** Whether {@code container} (or its parent) is paused by this pauser. */
    public boolean isPaused(MessageListenerContainer container) {
        return paused.containsKey(topLevel(container));
    }

    /** How many times a container was paused for {@code budget} (also the counter {@code sumi.budget.pauses}). */
    public long pauses(String budget) {
        AtomicLong count = pauses.get(budget);
        return count == null ? 0 : count.get();
    }

    /** How many times a container paused for {@code budget} was resumed (also {@code sumi.budget.resumes}). */
    public long resumes(String budget) {
        AtomicLong count = resumes.get(budget);
        return count == null ? 0 : count.get();
    }

    private Counter counter(Map<String, Counter> counters, String name, String budget) {
        return counters.computeIfAbsent(
                budget,
                b -> Counter.builder(name)
                        .description("Kafka listener containers paused or resumed for a budget")
                        .tag("budget", b)
                        .register(meterRegistry));
    }

    private MessageListenerContainer topLevel(MessageListenerContainer container) {
        ListenerContainerRegistry containers = this.containers;
        if (containers != null) {
            for (MessageListenerContainer candidate : containers.getAllListenerContainers()) {
                if (candidate == container
                        || (candidate instanceof ConcurrentMessageListenerContainer<?, ?> concurrent
                                && concurrent.getContainers().contains(container))) {
                    return candidate;
                }
            }
        }
        return container;
    }

    // ------------------------------------------------------------------ lifecycle

    @Override
    public void start() {
        ListenerContainerRegistry containers = containerLookup.get();
        this.containers = containers;
        if (containers != null) {
            for (MessageListenerContainer container : containers.getAllListenerContainers()) {
                if (container instanceof AbstractMessageListenerContainer<?, ?> listenerContainer) {
                    listenerContainer.setCommonErrorHandler(errorHandler(listenerContainer.getCommonErrorHandler()));
                }
            }
        }
        checks.start();
    }

    @Override
    public void stop() {
        checks.stop();
    }

    @Override
    public boolean isRunning() {
        return checks.isRunning();
    }

    /** Starts just before the listener containers, so their error handlers are wrapped first. */
    @Override
    public int getPhase() {
        return AbstractMessageListenerContainer.DEFAULT_PHASE - 1;
    }
}
