package io.sumi.autoconfigure.actuate;

import io.github.resilience4j.circuitbreaker.CircuitBreaker;
import io.sumi.budget.Budget;
import io.sumi.budget.BudgetConfig;
import io.sumi.budget.BudgetRegistry;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.actuate.endpoint.InvalidEndpointRequestException;

/**
 * {@link SumiEndpoint}'s budgets on a {@link BudgetRegistry}: their state and spend, forcing one
 * open or closed, resetting its window, changing its limit (in memory, on this instance).
 *
 * @since 0.1.0
 */
public class BudgetRegistryOperations implements SumiBudgetsOperations {

    private final BudgetRegistry budgets;

    public BudgetRegistryOperations(BudgetRegistry budgets) {
        this.budgets = Objects.requireNonNull(budgets, "budgets");
    }

    @Override
    public Map<String, Object> all() {
        Map<String, Object> all = new LinkedHashMap<>();
        budgets.names().stream().sorted().forEach(name -> budgets.find(name).ifPresent(b -> all.put(name, budget(b))));
        return all;
    }

    @Override
    public Map<String, Object> write(String action, String name, @Nullable Double limit) {
        return switch (action) {
            case "force-open" -> budgetAction(name, Budget::forceOpen);
            case "force-closed" -> budgetAction(name, Budget::forceClosed);
            case "reset-window" -> budgetAction(name, Budget::resetWindow);
            case "limit" -> changeLimit(name, limit);
            default ->
                throw new InvalidEndpointRequestException("Unknown budgets write '" + action + "'", "Unknown write");
        };
    }

    /** A budget as the endpoint and the budgets' health show it. */
    static Map<String, Object> budget(Budget budget) {
        CircuitBreaker.State state = budget.refresh();
        BudgetConfig config = budget.config();
        Map<String, Object> entry = new LinkedHashMap<>();
        entry.put("state", state.name());
        entry.put("spent", budget.spent());
        entry.put("remaining", budget.remaining());
        entry.put("limit", config.limit());
        entry.put("window", config.window().toString());
        entry.put("costPerCall", config.costPerCall());
        entry.put("callsInFlight", budget.callsInFlight());
        entry.put("retryAt", budget.retryAt().map(Instant::toString).orElse(null));
        return entry;
    }

    private Map<String, Object> budgetAction(String name, Consumer<Budget> action) {
        Budget budget = requireBudget(name);
        try {
            action.accept(budget);
        } catch (UnsupportedOperationException ex) {
            // A fleet budget's window is shared: it is not reset from one instance.
            return SumiEndpoint.unchanged(String.valueOf(ex.getMessage()));
        }
        Map<String, Object> result = SumiEndpoint.changed(1);
        result.put("budget", budget(budget));
        return result;
    }

    private Map<String, Object> changeLimit(String name, @Nullable Double limit) {
        Budget budget = requireBudget(name);
        if (limit == null) {
            throw new InvalidEndpointRequestException("budgets/limit needs a limit", "Missing limit");
        }
        BudgetConfig config;
        try {
            config = BudgetConfig.from(budget.config()).limit(limit).build();
        } catch (IllegalArgumentException ex) {
            throw new InvalidEndpointRequestException(String.valueOf(ex.getMessage()), "Invalid limit");
        }
        Budget updated = budgets.update(budget.name(), config);
        Map<String, Object> result = SumiEndpoint.changed(1);
        result.put("budget", budget(updated));
        return result;
    }

    private Budget requireBudget(String name) {
        if (budgets.find(name).isEmpty()) {
            throw new InvalidEndpointRequestException("No budget named '" + name + "'", "Unknown budget");
        }
        return budgets.budget(name);
    }
}
