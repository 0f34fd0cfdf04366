package io.sumi.outbox;

import io.sumi.testing.TestDatabase;

class MariaDbOutboxAppendIntegrationTests extends OutboxAppendContractTests {

    @Override
    TestDatabase database() {
        return TestDatabase.MARIADB;
    }
}
