package io.sumi.outbox;

import io.sumi.testing.TestDatabase;

class PostgresOutboxAppendIntegrationTests extends OutboxAppendContractTests {

    @Override
    TestDatabase database() {
        return TestDatabase.POSTGRESQL;
    }
}
