package io.sumi.consumer;

import io.sumi.testing.TestDatabase;

class MariaDbTransactionParticipationIntegrationTests extends TransactionParticipationIntegrationTests {

    @Override
    TestDatabase database() {
        return TestDatabase.MARIADB;
    }
}
