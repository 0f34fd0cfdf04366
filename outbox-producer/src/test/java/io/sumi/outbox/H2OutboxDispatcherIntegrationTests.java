package io.sumi.outbox;

import io.sumi.testing.TestDatabase;

class H2OutboxDispatcherIntegrationTests extends OutboxDispatcherContractTests {

    @Override
    TestDatabase database() {
        return TestDatabase.H2;
    }
}
