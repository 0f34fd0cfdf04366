package io.sumi.store.jdbc;

import io.sumi.testing.TestDatabase;

class MariaDbProcessedMessageStoreIntegrationTests extends ProcessedMessageStoreContractTests {

    @Override
    TestDatabase database() {
        return TestDatabase.MARIADB;
    }
}
