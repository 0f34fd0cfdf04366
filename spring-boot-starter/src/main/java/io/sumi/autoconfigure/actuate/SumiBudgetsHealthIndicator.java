package io.sumi.autoconfigure.actuate;

import io.sumi.budget.BudgetRegistry;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;

/**
 * The budgets' health: always {@code UP}, with every budget's state, spend, remaining, limit and
 * retry time as details. An open budget is reported, never failed: a consumer paused by its budget
 * is doing what it should, and a failing health would restart or unplug a healthy pod.
 */
public class SumiBudgetsHealthIndicator implements HealthIndicator {

    private final BudgetRegistry budgets;

    public SumiBudgetsHealthIndicator(BudgetRegistry budgets) {
        this.budgets = Objects.requireNonNull(budgets, "budgets");
    }

    @Override
    public Health health() {
        Map<String, Object> all = new LinkedHashMap<>();
        budgets.names().stream()
                .sorted()
                .forEach(name ->
                        budgets.find(name).ifPresent(budget -> all.put(name, BudgetRegistryOperations.budget(budget))));
        long open = all.values().stream()
                .filter(b -> !"CLOSED".equals(((Map<?, ?>) b).get("state")))
                .count();
        return Health.up().withDetail("notClosed", open).withDetails(all).build();
    }
}
