package io.sumi.stream;

import io.github.resilience4j.circuitbreaker.CircuitBreaker;
import io.micrometer.core.instrument.MeterRegistry;
import io.sumi.budget.Budget;
import io.sumi.budget.BudgetPauser;
import io.sumi.budget.BudgetRegistry;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
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
 * it half-opens or closes: the first message then is the probe call. When to resume is the core's
 * {@link BudgetPauser}, the same for every binder; this class finds the bindings and pauses them
 * through Spring Cloud Stream's own API ({@link BindingsLifecycleController#pause(String)} /
 * {@link BindingsLifecycleController#resume(String)}, what the {@code bindings} actuator endpoint
 * calls), so it works for any binder whose bindings can pause (Kafka; a binder that cannot is
 * logged once and left running, its refusals are redelivered).
 *
 * <p>A binding belongs to a budget when its name is {@code <function>-in-<n>} (or a composition
 * {@code a|b-in-<n>} containing the function). Messages refused while the budget was open are not
 * lost: the refusal is an error the binder redelivers (Sumi's container customizer keeps it from
 * the dead-letter topic), and a paused binding fetches nothing.
 *
 * <p>A binding has no refusal callback, so the check (every {@code checkInterval}; budgets move from
 * open to half-open lazily, on the budget's clock) pauses the bindings of open budgets; budget
 * transitions resume them. Counters {@code sumi.budget.pauses} and {@code sumi.budget.resumes}
 * (tags {@code budget}, {@code listener}: the binding's name), as every binder's. Thread-safe.
 */
public class BudgetBindingPauser extends BudgetPauser<String> implements SmartLifecycle {

    private static final Logger log = LoggerFactory.getLogger(BudgetBindingPauser.class);

    private final BudgetRegistry budgets;
    private final BindingsLifecycleController bindings;
    private final Supplier<Map<String, String>> functionBudgets;
    private final Supplier<Set<String>> inputBindingNames;

    private final Set<String> unpausable = ConcurrentHashMap.newKeySet();

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
        super(budgets, checkInterval, meters, "sumi-budget-binding-pauser");
        this.budgets = Objects.requireNonNull(budgets, "budgets");
        this.bindings = Objects.requireNonNull(bindings, "bindings");
        this.functionBudgets = Objects.requireNonNull(functionBudgets, "functionBudgets");
        this.inputBindingNames = Objects.requireNonNull(inputBindingNames, "inputBindingNames");
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
            for (String function : definition.split("\\|", -1)) {
                String budget = byFunction.get(function);
                if (budget != null) {
                    result.put(binding, budget);
                    break;
                }
            }
        }
        return result;
    }

    /** Pauses the bindings of open budgets, then resumes those of budgets that can take calls again. */
    @Override
    public void check() {
        budgetedBindings().forEach((binding, budgetName) -> {
            Budget budget = budgets.find(budgetName).orElse(null);
            if (budget == null || unpausable.contains(binding) || isPaused(binding)) {
                return;
            }
            if (budget.refresh() == CircuitBreaker.State.OPEN && pausable(binding)) {
                pause(binding, budgetName);
            }
        });
        super.check();
    }

    /** Whether {@code binding} exists. */
    private boolean pausable(String binding) {
        List<Binding<?>> found = bindings.queryState(binding);
        return found != null && !found.isEmpty();
    }

    /**
     * Pauses the binding. A binder that cannot pause leaves it running: it is logged once and never
     * paused again (its refusals are redelivered); the pause recorded for it ends at the budget's
     * next half-opening as any other.
     */
    @Override
    protected void pauseListener(String binding) {
        bindings.pause(binding);
        List<Binding<?>> found = bindings.queryState(binding);
        if (found != null && !found.stream().allMatch(Binding::isPaused) && unpausable.add(binding)) {
            log.warn(
                    "Spring Cloud Stream binding '{}' cannot be paused by its binder; its budget refusals are"
                            + " redelivered instead",
                    binding);
        }
    }

    @Override
    protected void resumeListener(String binding) {
        bindings.resume(binding);
    }

    @Override
    protected String id(String binding) {
        return binding;
    }

    @Override
    protected String describe(String binding) {
        return "Spring Cloud Stream binding '" + binding + "'";
    }

    /** After the bindings started (their phase is {@code Integer.MAX_VALUE - 1000} and below). */
    @Override
    public int getPhase() {
        return Integer.MAX_VALUE - 100;
    }
}
