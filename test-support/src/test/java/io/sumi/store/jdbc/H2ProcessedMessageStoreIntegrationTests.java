package io.sumi.store.jdbc;

import io.sumi.testing.TestDatabase;

class H2ProcessedMessageStoreIntegrationTests extends JdbcProcessedMessageStoreContractTests {

    @Override
    TestDatabase database() {
        return TestDatabase.H2;
    }
}
