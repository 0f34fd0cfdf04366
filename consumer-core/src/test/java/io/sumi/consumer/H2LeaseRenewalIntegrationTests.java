package io.sumi.consumer;

import io.sumi.testing.TestDatabase;

class H2LeaseRenewalIntegrationTests extends LeaseRenewalIntegrationTests {

    @Override
    TestDatabase database() {
        return TestDatabase.H2;
    }
}
