package io.sumi.outbox;

import io.sumi.testing.TestDatabase;
import javax.sql.DataSource;

/**
 * The outbox tests' databases: {@link TestDatabase}'s servers, but a database of their own
 * ({@value #DATABASE_NAME}) on the local services, so that other modules' tests running at the
 * same time (which share {@code sumi_test}) never see, claim or delete these rows. Migrated with
 * Sumi's Flyway scripts, one pool per JVM. A database named by the environment (or a container)
 * is used as given. See {@link TestDatabase#dataSource(String, int)}.
 */
final class OutboxTestDatabases {

    static final String DATABASE_NAME = "sumi_outbox_test";

    private OutboxTestDatabases() {}

    static DataSource dataSource(TestDatabase database) {
        return database.dataSource(DATABASE_NAME, 12);
    }
}
