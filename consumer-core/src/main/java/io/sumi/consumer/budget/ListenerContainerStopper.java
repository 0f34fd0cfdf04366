package io.sumi.consumer.budget;

import io.github.resilience4j.circuitbreaker.CircuitBreaker;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import io.sumi.consumer.budget.internal.PeriodicCheck;
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
 * Stops a listener container of a queue broker while the budget its handler is bound to is
 * exhausted, and starts it again when the budget's breaker half-opens (or closes), as the Kafka
 * binder pauses and resumes its containers: a spent budget costs no loop of refused redeliveries
 * and dead-letters nothing. The broker binders (RabbitMQ, JMS) subclass it for their container
 * type; this class holds the bookkeeping and the restart check (on a {@code PeriodicCheck}, as the
 * Kafka binder's pauser).
 *
 * <p>A container is stopped on a thread of this stopper, never on the consumer thread that saw
 * the refusal (a container may wait for its consumer threads when it stops). A check every
 * {@code checkInterval} starts the containers of budgets whose breaker is {@code HALF_OPEN} or
 * {@code CLOSED} and whose refusal's {@link BudgetExhaustedException#retryAt() retryAt} has passed.
 * Counters {@code sumi.budget.pauses} and {@code sumi.budget.resumes} (tag {@code budget}), as the
 * Kafka binder's. Thread-safe.
 *
 * @param <C> the listener container type
 * @since 0.1.0
 */
public abstract class ListenerContainerStopper<C> {

    private static final Logger log = LoggerFactory.getLogger(ListenerContainerStopper.class);

    /** The default period of the restart check. */
    public static final Duration DEFAULT_CHECK_INTERVAL = Duration.ofSeconds(1);

    private record Stopped(String budget, @Nullable Instant notBefore) {}

    private final BudgetRegistry budgets;
    private final PeriodicCheck checks;
    private final MeterRegistry meterRegistry;
    private final Map<C, Stopped> stopped = new ConcurrentHashMap<>();
    private final Map<String, AtomicLong> stops = new ConcurrentHashMap<>();
    private final Map<String, AtomicLong> starts = new ConcurrentHashMap<>();

    /**
     * @param threadName the name of the stopper's thread (e.g. {@code sumi-rabbit-budget-stopper})
     */
    protected ListenerContainerStopper(
            BudgetRegistry budgets, Duration checkInterval, @Nullable MeterRegistry meterRegistry, String threadName) {
        this.budgets = Objects.requireNonNull(budgets, "budgets");
        this.checks = new PeriodicCheck(Objects.requireNonNull(threadName, "threadName"), checkInterval, this::check);
        this.meterRegistry = meterRegistry != null ? meterRegistry : new CompositeMeterRegistry();
    }

    /** Stops {@code container}; called on the stopper's thread. */
    protected abstract void stopContainer(C container);

    /** Starts {@code container} again. */
    protected abstract void startContainer(C container);

    /** Whether {@code container} is (still) running. */
    protected abstract boolean isContainerRunning(C container);

    /** Names {@code container} in log messages (its broker, queues). */
    protected abstract String describe(C container);

    /** Stops {@code container} (asynchronously) until the refusing budget can take calls again. */
    public void stop(C container, BudgetExhaustedException refusal) {
        Budget budget = budgets.find(refusal.budget()).orElse(null);
        CircuitBreaker.State state = budget != null ? budget.refresh() : CircuitBreaker.State.OPEN;
        Instant notBefore =
                state == CircuitBreaker.State.CLOSED ? refusal.retryAt().orElse(null) : null;
        if (stopped.putIfAbsent(container, new Stopped(refusal.budget(), notBefore)) != null) {
            return;
        }
        count(stops, "sumi.budget.pauses", refusal.budget());
        log.warn(
                "Stopping {}: budget '{}' refused a call ({}); starting it again when the budget can take calls{}",
                describe(container),
                refusal.budget(),
                refusal.reason(),
                refusal.retryAt().map(at -> ", due " + at).orElse(""));
        checks.runInBackground(() -> stopContainer(container));
    }

    /** Starts the stopped containers whose budget can take calls. */
    public void check() {
        stopped.forEach((container, entry) -> {
            Budget budget = budgets.find(entry.budget()).orElse(null);
            if (budget == null) {
                return;
            }
            CircuitBreaker.State state = budget.refresh();
            if (state != CircuitBreaker.State.HALF_OPEN && state != CircuitBreaker.State.CLOSED) {
                return;
            }
            if (entry.notBefore() != null && budget.now().isBefore(entry.notBefore())) {
                return;
            }
            if (isContainerRunning(container)) {
                return; // still stopping: the next check starts it
            }
            if (stopped.remove(container, entry)) {
                startContainer(container);
                count(starts, "sumi.budget.resumes", entry.budget());
                log.info("Started {} again: budget '{}' is {}", describe(container), entry.budget(), state);
            }
        });
    }

    /** Whether {@code container} is stopped by this stopper. */
    public boolean isStopped(C container) {
        return stopped.containsKey(container);
    }

    /** How many times a container was stopped for {@code budget}. */
    public long stops(String budget) {
        AtomicLong count = stops.get(budget);
        return count == null ? 0 : count.get();
    }

    /** How many times a container stopped for {@code budget} was started again. */
    public long starts(String budget) {
        AtomicLong count = starts.get(budget);
        return count == null ? 0 : count.get();
    }

    private void count(Map<String, AtomicLong> counts, String meter, String budget) {
        counts.computeIfAbsent(budget, b -> new AtomicLong()).incrementAndGet();
        Counter.builder(meter)
                .description("Listener containers paused (stopped) or resumed (started) for a budget")
                .tag("budget", budget)
                .register(meterRegistry)
                .increment();
    }

    /** Starts the periodic restart check. */
    public void start() {
        checks.start();
    }

    /** Stops the restart check (stopped containers stay stopped). */
    public void stop() {
        checks.stop();
    }

    /** Whether the restart check runs. */
    public boolean isRunning() {
        return checks.isRunning();
    }
}
