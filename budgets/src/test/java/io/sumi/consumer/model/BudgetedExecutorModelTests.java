package io.sumi.consumer.model;

import io.sumi.consumer.IdempotentExecutor;
import io.sumi.testing.TestDatabase;
import java.util.function.Supplier;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The executor model on every database, every sample under the budget decorator: H2 the fast
 * suite with the most tries, PostgreSQL a real server's locking and isolation, MariaDB InnoDB's
 * locking.
 */
@ParameterizedClass
@EnumSource(TestDatabase.class)
class BudgetedExecutorModelTests extends ExecutorModelProperties {

    @Parameter
    TestDatabase database;

    @Override
    ModelLedger ledger() {
        return ModelLedger.of(database);
    }

    @Override
    Supplier<IdempotentExecutor.Decorator> budgets() {
        return BudgetedExecutorModels.unlimitedBudget();
    }
}
