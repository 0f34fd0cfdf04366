package io.sumi.consumer.model;

import io.sumi.testing.TestDatabase;
import net.jqwik.api.lifecycle.AddLifecycleHook;

/** The model on MariaDB: fewer tries, InnoDB's locking. */
@ModelTries(250)
@AddLifecycleHook(ModelTries.Hook.class)
class MariaDbExecutorModelTests extends ExecutorModelProperties {

    @Override
    TestDatabase database() {
        return TestDatabase.MARIADB;
    }
}
