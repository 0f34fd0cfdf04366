package io.sumi.consumer;

import io.sumi.testing.TestDatabase;

class PostgresTransactionParticipationIntegrationTests extends TransactionParticipationIntegrationTests {

    @Override
    TestDatabase database() {
        return TestDatabase.POSTGRESQL;
    }
}
