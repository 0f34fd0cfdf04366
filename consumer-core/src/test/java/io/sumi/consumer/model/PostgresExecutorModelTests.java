package io.sumi.consumer.model;

import io.sumi.testing.TestDatabase;

/** The model on PostgreSQL: fewer tries, a real server's locking and isolation (unbudgeted; sumi-budgets runs as many budgeted). */
class PostgresExecutorModelTests extends ExecutorModelProperties {

    @Override
    TestDatabase database() {
        return TestDatabase.POSTGRESQL;
    }

    @Override
    int defaultTries() {
        return 75;
    }
}
