package io.sumi.store.jdbc;

import io.sumi.testing.TestDatabase;

class H2ProcessedMessageStoreIntegrationTests extends ProcessedMessageStoreContractTests {

    @Override
    TestDatabase database() {
        return TestDatabase.H2;
    }
}
