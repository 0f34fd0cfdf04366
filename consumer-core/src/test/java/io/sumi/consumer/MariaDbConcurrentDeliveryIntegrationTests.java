package io.sumi.consumer;

import io.sumi.testing.TestDatabase;

class MariaDbConcurrentDeliveryIntegrationTests extends ConcurrentDeliveryIntegrationTests {

    @Override
    TestDatabase database() {
        return TestDatabase.MARIADB;
    }
}
