package io.sumi.consumer.model;

import io.sumi.testing.TestDatabase;
import net.jqwik.api.lifecycle.AddLifecycleHook;

/** The model on PostgreSQL: fewer tries, a real server's locking and isolation. */
@ModelTries(150)
@AddLifecycleHook(ModelTries.Hook.class)
class PostgresExecutorModelTests extends ExecutorModelProperties {

    @Override
    TestDatabase database() {
        return TestDatabase.POSTGRESQL;
    }
}
