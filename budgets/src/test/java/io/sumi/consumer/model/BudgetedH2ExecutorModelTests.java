package io.sumi.consumer.model;

import io.sumi.consumer.IdempotentExecutor;
import io.sumi.testing.TestDatabase;
import java.util.function.Supplier;

/** The executor model on H2, every sample under the budget decorator: the fast suite, the most tries. */
class BudgetedH2ExecutorModelTests extends ExecutorModelProperties {

    @Override
    TestDatabase database() {
        return TestDatabase.H2;
    }

    @Override
    int defaultTries() {
        return 500;
    }

    @Override
    Supplier<IdempotentExecutor.Decorator> budgets() {
        return BudgetedExecutorModels.unlimitedBudget();
    }
}
