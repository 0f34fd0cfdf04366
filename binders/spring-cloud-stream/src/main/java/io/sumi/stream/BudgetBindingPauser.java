package io.sumi.stream;

import io.github.resilience4j.circuitbreaker.CircuitBreaker;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import io.sumi.consumer.budget.Budget;
import io.sumi.consumer.budget.BudgetRegistry;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.cloud.stream.binder.Binding;
import org.springframework.cloud.stream.binding.BindingsLifecycleController;
import org.springframework.context.SmartLifecycle;

/**
 * Pauses the Spring Cloud Stream input bindings of functions bound to a budget
 * ({@code @IdempotentHandler(budget = ...)} on a {@code Consumer} or {@code Function} bean) while the
 * budget's breaker is open (spent, failing, or its shared store unreachable), and resumes them when
 * it half-opens or closes: the first message then is the probe call. The twin of the Kafka binder's
 * {@code BudgetListenerPauser}, through Spring Cloud Stream's own API
 * ({@link BindingsLifecycleController#pause(String)} / {@link BindingsLifecycleController#resume(String)},
 * what the {@code bindings} actuator endpoint calls), so it works for any binder whose bindings can
 * pause (Kafka; a binder that cannot is logged once and left running, its refusals are redelivered).
 *
 * <p>A binding belongs to a budget when its name is {@code <function>-in-<n>} (or a composition
 * {@code a|b-in-<n>} containing the function). Messages refused while the budget was open are not
 * lost: the refusal is an error the binder redelivers (Sumi's container customizer keeps it from
 * the dead-letter topic), and a paused binding fetches nothing.
 *
 * <p>Checks every {@code checkInterval} (budgets move from open to half-open lazily, on the
 * budget's clock) and at every budget transition. Metrics: counters {@code sumi.budget.binding.pauses}
 * and {@code sumi.budget.binding.resumes} (tags {@code budget}, {@code binding}). Thread-safe.
 */
public class BudgetBindingPauser implements SmartLifecycle {

    private static final Logger log = LoggerFactory.getLogger(BudgetBindingPauser.class);

    private final BudgetRegistry budgets;
    private final BindingsLifecycleController bindings;
    private final Supplier<Map<String, String>> functionBudgets;
    private final Supplier<Set<String>> inputBindingNames;
    private final Duration checkInterval;
    private final MeterRegistry meters;
    /** Bindings this pauser paused, with their budget. */
    private final Map<String, String> paused = new ConcurrentHashMap<>();

    private final Set<String> unpausable = ConcurrentHashMap.newKeySet();
    private volatile @Nullable ScheduledExecutorService scheduler;

    /**
     * @param functionBudgets the budget of each function bean ({@link IdempotentFunctionPostProcessor#functionBudgets()})
     * @param inputBindingNames the names of the application's input bindings (the
     *     {@code BindingService}'s consumer binding names)
     */
    public BudgetBindingPauser(
            BudgetRegistry budgets,
            BindingsLifecycleController bindings,
            Supplier<Map<String, String>> functionBudgets,
            Supplier<Set<String>> inputBindingNames,
            Duration checkInterval,
            @Nullable MeterRegistry meters) {
        this.budgets = Objects.requireNonNull(budgets, "budgets");
        this.bindings = Objects.requireNonNull(bindings, "bindings");
        this.functionBudgets = Objects.requireNonNull(functionBudgets, "functionBudgets");
        this.inputBindingNames = Objects.requireNonNull(inputBindingNames, "inputBindingNames");
        if (checkInterval.isNegative() || checkInterval.isZero()) {
            throw new IllegalArgumentException("The check interval must be positive, was " + checkInterval);
        }
        this.checkInterval = checkInterval;
        this.meters = meters != null ? meters : new CompositeMeterRegistry();
        // Transitions run under the budget's lock: the bindings move on the pauser's thread.
        budgets.addListener((budget, from, to) -> {
            ScheduledExecutorService running = scheduler;
            if (running != null) {
                running.execute(this::check);
            }
        });
    }

    /** Input binding name to budget, for the bindings of budgeted functions. */
    Map<String, String> budgetedBindings() {
        Map<String, String> byFunction = functionBudgets.get();
        Map<String, String> result = new LinkedHashMap<>();
        if (byFunction.isEmpty()) {
            return result;
        }
        for (String binding : inputBindingNames.get()) {
            int in = binding.lastIndexOf("-in-");
            String definition = in > 0 ? binding.substring(0, in) : binding;
            for (String function : definition.split("\\|")) {
                String budget = byFunction.get(function);
                if (budget != null) {
                    result.put(binding, budget);
                    break;
                }
            }
        }
        return result;
    }

    /** Pauses the bindings of open budgets and resumes those of budgets that can take calls again. */
    public synchronized void check() {
        try {
            budgetedBindings().forEach((binding, budgetName) -> {
                Budget budget = budgets.find(budgetName).orElse(null);
                if (budget == null || unpausable.contains(binding)) {
                    return;
                }
                CircuitBreaker.State state = budget.refresh();
                if (state == CircuitBreaker.State.OPEN) {
                    if (!paused.containsKey(binding) && pause(binding)) {
                        paused.put(binding, budgetName);
                        counter("sumi.budget.binding.pauses", budgetName, binding)
                                .increment();
                        log.warn(
                                "Paused Spring Cloud Stream binding '{}': budget '{}' is open{}",
                                binding,
                                budgetName,
                                budget.retryAt().map(at -> " until " + at).orElse(""));
                    }
                } else if (paused.remove(binding) != null) {
                    bindings.resume(binding);
                    counter("sumi.budget.binding.resumes", budgetName, binding).increment();
                    log.info("Resumed Spring Cloud Stream binding '{}': budget '{}' is {}", binding, budgetName, state);
                }
            });
        } catch (RuntimeException ex) {
            log.warn("The budget check of Spring Cloud Stream bindings failed; it runs again", ex);
        }
    }

    private boolean pause(String binding) {
        List<Binding<?>> found = bindings.queryState(binding);
        if (found == null || found.isEmpty()) {
            return false;
        }
        bindings.pause(binding);
        boolean pausedNow = found.stream().allMatch(Binding::isPaused);
        if (!pausedNow) {
            unpausable.add(binding);
            log.warn(
                    "Spring Cloud Stream binding '{}' cannot be paused by its binder; its budget refusals are"
                            + " redelivered instead",
                    binding);
        }
        return pausedNow;
    }

    /** Whether this pauser holds {@code binding} paused. */
    public boolean isPaused(String binding) {
        return paused.containsKey(binding);
    }

    private Counter counter(String name, String budget, String binding) {
        return Counter.builder(name)
                .description(
                        name.endsWith("pauses")
                                ? "Spring Cloud Stream bindings paused for an open budget"
                                : "Spring Cloud Stream bindings resumed when their budget could take calls again")
                .tag("budget", budget)
                .tag("binding", binding)
                .register(meters);
    }

    @Override
    public synchronized void start() {
        if (scheduler != null) {
            return;
        }
        ScheduledExecutorService executor = Executors.newSingleThreadScheduledExecutor(runnable -> {
            Thread thread = new Thread(runnable, "sumi-budget-binding-pauser");
            thread.setDaemon(true);
            return thread;
        });
        long period = checkInterval.toMillis();
        executor.scheduleWithFixedDelay(this::check, period, period, TimeUnit.MILLISECONDS);
        scheduler = executor;
    }

    @Override
    public synchronized void stop() {
        ScheduledExecutorService executor = scheduler;
        scheduler = null;
        if (executor != null) {
            executor.shutdownNow();
        }
    }

    @Override
    public boolean isRunning() {
        return scheduler != null;
    }

    /** After the bindings started (their phase is {@code Integer.MAX_VALUE - 1000} and below). */
    @Override
    public int getPhase() {
        return Integer.MAX_VALUE - 100;
    }
}
