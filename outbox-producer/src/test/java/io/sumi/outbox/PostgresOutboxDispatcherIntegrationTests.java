package io.sumi.outbox;

import io.sumi.testing.TestDatabase;

class PostgresOutboxDispatcherIntegrationTests extends OutboxDispatcherContractTests {

    @Override
    TestDatabase database() {
        return TestDatabase.POSTGRESQL;
    }
}
