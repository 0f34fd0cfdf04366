package io.sumi.outbox;

import io.sumi.testing.TestDatabase;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.EnumSource;

/** The dispatcher's contract ({@link OutboxDispatcherContractTests}) on every database. */
@ParameterizedClass
@EnumSource(TestDatabase.class)
class OutboxDispatcherIntegrationTests extends OutboxDispatcherContractTests {

    /** The database, the class's parameter. */
    @Parameter
    TestDatabase database;

    @Override
    TestDatabase database() {
        return database;
    }
}
