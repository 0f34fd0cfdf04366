package io.sumi.consumer.model;

import io.sumi.budget.BudgetConfig;
import io.sumi.budget.BudgetRegistry;
import io.sumi.consumer.IdempotentExecutor;
import java.time.Duration;
import java.util.function.Supplier;

/**
 * The budget decorator the budgeted model runs use: one registry per instance (a JVM of its own),
 * with a budget {@code model} that never runs out and counts no failure, so the model's outcomes
 * are the unbudgeted executor's while every call goes through the decorator's permit.
 */
final class BudgetedExecutorModels {

    private BudgetedExecutorModels() {}

    static Supplier<IdempotentExecutor.Decorator> unlimitedBudget() {
        return () -> BudgetRegistry.builder()
                .budget(
                        "model",
                        BudgetConfig.custom()
                                .limit(1e12)
                                .window(Duration.ofHours(1))
                                .recordFailure(t -> false)
                                .build())
                .build();
    }
}
