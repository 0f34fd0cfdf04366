package io.sumi.consumer.model;

import io.sumi.testing.TestDatabase;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The model on every database, the executor bare (sumi-budgets runs as many tries budgeted): H2
 * the fast suite with the most tries, PostgreSQL a real server's locking and isolation, MariaDB
 * InnoDB's locking.
 */
@ParameterizedClass
@EnumSource(TestDatabase.class)
class ExecutorModelTests extends ExecutorModelProperties {

    @Parameter
    TestDatabase database;

    @Override
    ModelLedger ledger() {
        return ModelLedger.of(database);
    }
}
