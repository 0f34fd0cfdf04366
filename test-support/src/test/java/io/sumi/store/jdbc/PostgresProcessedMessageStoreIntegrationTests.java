package io.sumi.store.jdbc;

import io.sumi.testing.TestDatabase;

class PostgresProcessedMessageStoreIntegrationTests extends JdbcProcessedMessageStoreContractTests {

    @Override
    TestDatabase database() {
        return TestDatabase.POSTGRESQL;
    }
}
