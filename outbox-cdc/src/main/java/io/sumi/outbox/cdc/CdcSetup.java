package io.sumi.outbox.cdc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the CDC path needs of PostgreSQL, checked (and created where Sumi may) before the engine
 * starts: {@code wal_level = logical}, the {@code REPLICATION} attribute, the offsets and
 * heartbeat tables, and a publication of INSERTs on the outbox and heartbeat tables. Each missing
 * piece fails the start with what to do about it.
 */
final class CdcSetup {

    private static final Logger log = LoggerFactory.getLogger(OutboxCdc.class);

    /**
     * The heartbeat table: Debezium's action query inserts here, so a quiet outbox does not pin WAL.
     * Its key is a generated id, not the slot: the action query deletes the slot's old row and
     * inserts the new one in one statement, whose two parts do not run in a set order.
     */
    static final String HEARTBEAT_TABLE = "sumi_outbox_cdc_heartbeat";

    private static final String SQL_STATEMENT_CREATE_HEARTBEAT = """
            CREATE TABLE IF NOT EXISTS sumi_outbox_cdc_heartbeat (
                id        BIGINT GENERATED ALWAYS AS IDENTITY,
                slot_name VARCHAR(200)             NOT NULL,
                beat_at   TIMESTAMP WITH TIME ZONE NOT NULL,
                CONSTRAINT sumi_outbox_cdc_heartbeat_pk PRIMARY KEY (id)
            )
            """;

    private static final String SQL_QUERY_REPLICATION_ROLE = """
            SELECT rolreplication OR rolsuper FROM pg_roles WHERE rolname = current_user
            """;

    /** Parameters: publication name. */
    private static final String SQL_QUERY_PUBLICATION = """
            SELECT pubinsert, pubupdate, pubdelete, pubtruncate, puballtables FROM pg_publication WHERE pubname = ?
            """;

    /** Parameters: publication name. */
    private static final String SQL_QUERY_PUBLICATION_TABLES = """
            SELECT schemaname, tablename FROM pg_publication_tables WHERE pubname = ?
            """;

    private CdcSetup() {}

    /** The heartbeat's action query for {@code slot}: one row per slot, replaced at each beat (only the INSERT is published). */
    static String heartbeatQuery(String slot) {
        return "WITH gone AS (DELETE FROM " + HEARTBEAT_TABLE + " WHERE slot_name = '" + slot + "') INSERT INTO "
                + HEARTBEAT_TABLE + " (slot_name, beat_at) VALUES ('" + slot + "', CURRENT_TIMESTAMP)";
    }

    static void prepare(Connection connection, String schema, String outboxTable, String publication)
            throws SQLException {
        requireLogicalWal(connection);
        requireReplicationRole(connection);
        try (Statement statement = connection.createStatement()) {
            statement.execute(SQL_STATEMENT_CREATE_HEARTBEAT);
        }
        JdbcOffsetBackingStore.createTable(connection);
        ensurePublication(connection, schema, outboxTable, publication);
    }

    static void requireLogicalWal(Connection connection) throws SQLException {
        String walLevel;
        try (Statement statement = connection.createStatement();
                ResultSet rs = statement.executeQuery("SHOW wal_level")) {
            rs.next();
            walLevel = rs.getString(1);
        }
        if (!"logical".equals(walLevel)) {
            throw new CdcSetupException("The outbox CDC path needs PostgreSQL's wal_level = logical, the server runs "
                    + walLevel + ". Set it (ALTER SYSTEM SET wal_level = logical, or wal_level = logical in"
                    + " postgresql.conf; on a managed service its logical-replication flag) and restart the server,"
                    + " or set sumi.outbox.cdc.enabled=false to dispatch by polling only. See docs/outbox-cdc.md.");
        }
    }

    static void requireReplicationRole(Connection connection) throws SQLException {
        boolean may;
        String user;
        try (Statement statement = connection.createStatement();
                ResultSet rs = statement.executeQuery("SELECT current_user")) {
            rs.next();
            user = rs.getString(1);
        }
        try (PreparedStatement statement = connection.prepareStatement(SQL_QUERY_REPLICATION_ROLE);
                ResultSet rs = statement.executeQuery()) {
            may = rs.next() && rs.getBoolean(1);
        }
        if (!may) {
            throw new CdcSetupException("The outbox CDC path streams a replication slot: the database user " + user
                    + " needs the REPLICATION attribute (ALTER ROLE " + user + " WITH REPLICATION;"
                    + " on Amazon RDS: GRANT rds_replication TO " + user + "). See docs/outbox-cdc.md.");
        }
    }

    static void ensurePublication(Connection connection, String schema, String outboxTable, String publication)
            throws SQLException {
        boolean exists;
        try (PreparedStatement statement = connection.prepareStatement(SQL_QUERY_PUBLICATION)) {
            statement.setString(1, publication);
            try (ResultSet rs = statement.executeQuery()) {
                exists = rs.next();
                if (exists && !rs.getBoolean("pubinsert")) {
                    throw new CdcSetupException("The publication " + publication
                            + " does not publish INSERTs: the outbox CDC path needs it created WITH (publish ="
                            + " 'insert'). Drop it, or name another one (sumi.outbox.cdc.publication).");
                }
            }
        }
        if (!exists) {
            String create = "CREATE PUBLICATION " + publication + " FOR TABLE " + schema + "." + outboxTable + ", "
                    + schema + "." + HEARTBEAT_TABLE + " WITH (publish = 'insert')";
            try (Statement statement = connection.createStatement()) {
                statement.execute(create);
            } catch (SQLException ex) {
                throw new CdcSetupException(
                        "Could not create the publication of the outbox (" + ex.getMessage() + "). It needs the"
                                + " CREATE privilege on the database and ownership of the tables; or have an"
                                + " administrator run: " + create,
                        ex);
            }
            log.info(
                    "Created the publication {} of INSERTs on {}.{} and {}",
                    publication,
                    schema,
                    outboxTable,
                    HEARTBEAT_TABLE);
            return;
        }
        List<String> tables = new ArrayList<>();
        try (PreparedStatement statement = connection.prepareStatement(SQL_QUERY_PUBLICATION_TABLES)) {
            statement.setString(1, publication);
            try (ResultSet rs = statement.executeQuery()) {
                while (rs.next()) {
                    tables.add(rs.getString(1) + "." + rs.getString(2));
                }
            }
        }
        if (!tables.contains(schema + "." + outboxTable)) {
            throw new CdcSetupException("The publication " + publication + " does not include " + schema + "."
                    + outboxTable + " (it has " + tables + "): ALTER PUBLICATION " + publication + " ADD TABLE "
                    + schema + "." + outboxTable + ";");
        }
        if (!tables.contains(schema + "." + HEARTBEAT_TABLE)) {
            try (Statement statement = connection.createStatement()) {
                statement.execute("ALTER PUBLICATION " + publication + " ADD TABLE " + schema + "." + HEARTBEAT_TABLE);
            } catch (SQLException ex) {
                log.warn(
                        "The publication {} does not include {}: heartbeats will not advance the slot on a quiet"
                                + " outbox ({})",
                        publication,
                        HEARTBEAT_TABLE,
                        ex.getMessage());
            }
        }
    }
}
