package io.sumi.consumer.model;

import io.sumi.testing.TestDatabase;
import net.jqwik.api.lifecycle.AddLifecycleHook;

/** The model on MariaDB: fewer tries, InnoDB's locking. */
@ModelTries(150)
@AddLifecycleHook(ModelTries.Hook.class)
class MariaDbExecutorModelTests extends ExecutorModelProperties {

    @Override
    TestDatabase database() {
        return TestDatabase.MARIADB;
    }
}
