package io.sumi.consumer.model;

import io.sumi.consumer.IdempotentExecutor;
import io.sumi.testing.TestDatabase;
import java.util.function.Supplier;

/** The executor model on POSTGRESQL, every sample under the budget decorator: fewer tries, a real server's locking and isolation. */
class BudgetedPostgresExecutorModelTests extends ExecutorModelProperties {

    @Override
    TestDatabase database() {
        return TestDatabase.POSTGRESQL;
    }

    @Override
    int defaultTries() {
        return 75;
    }

    @Override
    Supplier<IdempotentExecutor.Decorator> budgets() {
        return BudgetedExecutorModels.unlimitedBudget();
    }
}
