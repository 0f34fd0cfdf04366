package io.sumi.consumer.model;

import io.sumi.testing.TestDatabase;

/** The model on H2: the fast suite, the most tries (unbudgeted; sumi-budgets runs as many budgeted). */
class H2ExecutorModelTests extends ExecutorModelProperties {

    @Override
    TestDatabase database() {
        return TestDatabase.H2;
    }

    @Override
    int defaultTries() {
        return 500;
    }
}
