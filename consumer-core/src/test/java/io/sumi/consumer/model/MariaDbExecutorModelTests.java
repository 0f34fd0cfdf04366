package io.sumi.consumer.model;

import io.sumi.testing.TestDatabase;

/** The model on MariaDB: fewer tries, InnoDB's locking. */
@ModelTries(15)
class MariaDbExecutorModelTests extends ExecutorModelProperties {

    @Override
    TestDatabase database() {
        return TestDatabase.MARIADB;
    }
}
