package io.sumi.consumer;

import io.sumi.testing.TestDatabase;

class PostgresLeaseRenewalIntegrationTests extends LeaseRenewalIntegrationTests {

    @Override
    TestDatabase database() {
        return TestDatabase.POSTGRESQL;
    }
}
