package io.sumi.store.jdbc;

import javax.sql.DataSource;

/**
 * The databases the JDBC ledger supports.
 *
 * @deprecated since 0.1.0: the ledger and the outbox share {@link io.sumi.jdbc.DatabaseType} (module
 *     {@code sumi-jdbc-support}); use that. This alias remains so that code written against it
 *     compiles: {@link JdbcProcessedMessageStore.Builder#databaseType(DatabaseType)} still takes it.
 */
@Deprecated(since = "0.1.0", forRemoval = true)
public enum DatabaseType {

    /** PostgreSQL 12 or later. */
    POSTGRESQL(io.sumi.jdbc.DatabaseType.POSTGRESQL),

    /** MariaDB 10.5 or later ({@code INSERT ... RETURNING} is required). MySQL lacks it. */
    MARIADB(io.sumi.jdbc.DatabaseType.MARIADB),

    /** H2 2.x, for tests and local development. */
    H2(io.sumi.jdbc.DatabaseType.H2);

    private final io.sumi.jdbc.DatabaseType type;

    DatabaseType(io.sumi.jdbc.DatabaseType type) {
        this.type = type;
    }

    /** The same database as the shared {@link io.sumi.jdbc.DatabaseType}. */
    public io.sumi.jdbc.DatabaseType toDatabaseType() {
        return type;
    }

    /**
     * Detects the database behind a {@link DataSource} from its JDBC metadata.
     *
     * @throws IllegalStateException if the database is not supported, naming the ones that are
     * @see io.sumi.jdbc.DatabaseType#of(DataSource)
     */
    public static DatabaseType of(DataSource dataSource) {
        return valueOf(io.sumi.jdbc.DatabaseType.of(dataSource).name());
    }
}
