package io.sumi.consumer.model;

import io.sumi.consumer.IdempotentExecutor;
import io.sumi.testing.TestDatabase;
import java.util.function.Supplier;

/** The executor model on MARIADB, every sample under the budget decorator: fewer tries, InnoDB's locking. */
class BudgetedMariaDbExecutorModelTests extends ExecutorModelProperties {

    @Override
    TestDatabase database() {
        return TestDatabase.MARIADB;
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
