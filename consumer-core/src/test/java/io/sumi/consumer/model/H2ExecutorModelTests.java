package io.sumi.consumer.model;

import io.sumi.testing.TestDatabase;
import net.jqwik.api.lifecycle.AddLifecycleHook;

/** The model on H2: the fast suite, the most tries. */
@ModelTries(1000)
@AddLifecycleHook(ModelTries.Hook.class)
class H2ExecutorModelTests extends ExecutorModelProperties {

    @Override
    TestDatabase database() {
        return TestDatabase.H2;
    }
}
