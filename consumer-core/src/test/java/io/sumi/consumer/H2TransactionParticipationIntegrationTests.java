package io.sumi.consumer;

import io.sumi.testing.TestDatabase;

class H2TransactionParticipationIntegrationTests extends TransactionParticipationIntegrationTests {

    @Override
    TestDatabase database() {
        return TestDatabase.H2;
    }
}
