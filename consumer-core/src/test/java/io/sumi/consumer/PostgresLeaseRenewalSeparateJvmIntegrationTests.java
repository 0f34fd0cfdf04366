package io.sumi.consumer;

import io.sumi.testing.TestDatabase;

class PostgresLeaseRenewalSeparateJvmIntegrationTests extends LeaseRenewalSeparateJvmIntegrationTests {

    @Override
    TestDatabase database() {
        return TestDatabase.POSTGRESQL;
    }
}
