package io.sumi.consumer;

import io.sumi.testing.TestDatabase;

class MariaDbLeaseRenewalIntegrationTests extends LeaseRenewalIntegrationTests {

    @Override
    TestDatabase database() {
        return TestDatabase.MARIADB;
    }
}
