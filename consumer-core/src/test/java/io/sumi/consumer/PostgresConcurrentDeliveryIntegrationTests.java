package io.sumi.consumer;

import io.sumi.testing.TestDatabase;

class PostgresConcurrentDeliveryIntegrationTests extends ConcurrentDeliveryIntegrationTests {

    @Override
    TestDatabase database() {
        return TestDatabase.POSTGRESQL;
    }
}
