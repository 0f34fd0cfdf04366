package io.sumi.outbox;

import io.sumi.testing.TestDatabase;

class MariaDbOutboxDispatcherIntegrationTests extends OutboxDispatcherContractTests {

    @Override
    TestDatabase database() {
        return TestDatabase.MARIADB;
    }
}
