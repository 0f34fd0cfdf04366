package io.sumi.jms;

import io.sumi.testing.TestDatabase;

/** The ledger-side JMS tests with the ledger on MariaDB. */
class JmsListenerMariaDbIntegrationTests extends AbstractJmsListenerIntegrationTests {

    @Override
    TestDatabase database() {
        return TestDatabase.MARIADB;
    }

    @Override
    int brokerId() {
        return 2;
    }
}
