package io.sumi.consumer.model;

import io.sumi.testing.TestDatabase;

/** The model on MariaDB: fewer tries, InnoDB's locking (unbudgeted; sumi-budgets runs as many budgeted). */
class MariaDbExecutorModelTests extends ExecutorModelProperties {

    @Override
    TestDatabase database() {
        return TestDatabase.MARIADB;
    }

    @Override
    int defaultTries() {
        return 75;
    }
}
