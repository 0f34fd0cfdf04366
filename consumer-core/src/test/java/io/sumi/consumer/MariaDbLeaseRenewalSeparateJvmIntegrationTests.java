package io.sumi.consumer;

import io.sumi.testing.TestDatabase;

class MariaDbLeaseRenewalSeparateJvmIntegrationTests extends LeaseRenewalSeparateJvmIntegrationTests {

    @Override
    TestDatabase database() {
        return TestDatabase.MARIADB;
    }
}
