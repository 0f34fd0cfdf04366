package io.sumi.jdbc;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.Locale;
import javax.sql.DataSource;

/**
 * The databases Sumi's JDBC ledger ({@code JdbcProcessedMessageStore}) and JDBC outbox
 * ({@code OutboxTable}) support. The vendor differences themselves live in one dialect per
 * constant in each of them.
 *
 * @since 0.1.0
 */
public enum DatabaseType {

    /** PostgreSQL 13 or later (the oldest line the compatibility table lists). */
    POSTGRESQL,

    /**
     * MariaDB: 10.5 or later for the ledger ({@code INSERT ... RETURNING} is required), 10.6 or
     * later for the outbox ({@code SKIP LOCKED}). MySQL lacks {@code INSERT ... RETURNING}.
     */
    MARIADB,

    /** H2 2.x, for tests and local development. */
    H2;

    /**
     * Detects the database behind a {@link DataSource} from its JDBC metadata (one connection).
     *
     * @throws IllegalStateException if the database cannot be reached, or is not supported (the
     *     message names the ones that are)
     */
    public static DatabaseType of(DataSource dataSource) {
        try (Connection connection = dataSource.getConnection()) {
            String product = connection.getMetaData().getDatabaseProductName();
            String version = connection.getMetaData().getDatabaseProductVersion();
            return fromProductName(product, version);
        } catch (SQLException ex) {
            throw new IllegalStateException("Could not detect the database type: " + ex.getMessage(), ex);
        }
    }

    static DatabaseType fromProductName(String product, String version) {
        String name = product.toLowerCase(Locale.ROOT);
        if (name.contains("postgresql")) {
            return POSTGRESQL;
        }
        if (name.contains("mariadb")
                || (name.contains("mysql") && version.toLowerCase(Locale.ROOT).contains("mariadb"))) {
            return MARIADB;
        }
        if (name.equals("h2")) {
            return H2;
        }
        throw new IllegalStateException(
                "Sumi does not support " + product + " " + version
                        + "; supported: PostgreSQL, MariaDB 10.5+, H2 (MySQL lacks INSERT ... RETURNING, which the one-statement claim needs)");
    }
}
