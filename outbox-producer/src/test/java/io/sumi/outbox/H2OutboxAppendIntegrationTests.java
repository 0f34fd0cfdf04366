package io.sumi.outbox;

import io.sumi.testing.TestDatabase;

class H2OutboxAppendIntegrationTests extends OutboxAppendContractTests {

    @Override
    TestDatabase database() {
        return TestDatabase.H2;
    }
}
