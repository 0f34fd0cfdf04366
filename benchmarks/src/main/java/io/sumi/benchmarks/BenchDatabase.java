package io.sumi.benchmarks;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The PostgreSQL the run measures: creates its database if missing, gives every case a schema
 * and a HikariCP pool of its own, truncates between cases.
 */
final class BenchDatabase {

    /** Sumi's own PostgreSQL migration, run as is in each Sumi case's schema. */
    static final String LEDGER_MIGRATION = "db/sumi/postgresql/R__sumi_processed_messages.sql";

    private static final Pattern URL = Pattern.compile("(jdbc:postgresql://[^/]+/)([^?]+)(\\?.*)?");

    private final String url;
    private final String user;
    private final String password;

    BenchDatabase(String url, String user, String password) {
        this.url = url;
        this.user = user;
        this.password = password;
    }

    String url() {
        return url;
    }

    /** The database named in the URL. */
    String databaseName() {
        Matcher m = URL.matcher(url);
        return m.matches() ? m.group(2) : "";
    }

    /** Creates the database named in the URL if it does not exist (connecting to {@code postgres} to do so). */
    void ensureDatabase() throws SQLException {
        try {
            DriverManager.getConnection(url, user, password).close();
            return;
        } catch (SQLException ex) {
            if (!"3D000".equals(ex.getSQLState())) { // invalid_catalog_name
                throw ex;
            }
        }
        Matcher m = URL.matcher(url);
        if (!m.matches()) {
            throw new IllegalArgumentException("Cannot derive the maintenance database from " + url);
        }
        String name = m.group(2);
        if (!name.matches("[A-Za-z_][A-Za-z0-9_]*")) {
            throw new IllegalArgumentException("Refusing to create a database named '" + name + "'");
        }
        String maintenance = m.group(1) + "postgres" + (m.group(3) == null ? "" : m.group(3));
        try (Connection c = DriverManager.getConnection(maintenance, user, password);
                Statement s = c.createStatement()) {
            s.execute("CREATE DATABASE " + name);
        }
    }

    Connection connect() throws SQLException {
        return DriverManager.getConnection(url, user, password);
    }

    /** Server facts printed with the results. */
    Map<String, String> serverSettings() throws SQLException {
        Map<String, String> settings = new LinkedHashMap<>();
        try (Connection c = connect();
                Statement s = c.createStatement()) {
            try (ResultSet rs = s.executeQuery("SELECT version()")) {
                rs.next();
                settings.put("version", rs.getString(1));
            }
            for (String name : new String[] {
                "synchronous_commit",
                "fsync",
                "wal_sync_method",
                "full_page_writes",
                "shared_buffers",
                "max_wal_size",
                "commit_delay"
            }) {
                try (ResultSet rs = s.executeQuery("SHOW " + name)) {
                    rs.next();
                    settings.put(name, rs.getString(1));
                }
            }
        }
        return settings;
    }

    /** Drops and creates the case's schema and tables. */
    void prepare(BenchmarkCase benchmarkCase) throws SQLException {
        try (Connection c = connect();
                Statement s = c.createStatement()) {
            s.execute("DROP SCHEMA IF EXISTS " + benchmarkCase.schema() + " CASCADE");
            s.execute("CREATE SCHEMA " + benchmarkCase.schema());
            s.execute("SET search_path TO " + benchmarkCase.schema());
            benchmarkCase.createTables(c);
        }
    }

    void drop(BenchmarkCase benchmarkCase) throws SQLException {
        try (Connection c = connect();
                Statement s = c.createStatement()) {
            s.execute("DROP SCHEMA IF EXISTS " + benchmarkCase.schema() + " CASCADE");
        }
    }

    /**
     * Empties the case's tables and checkpoints, so each case starts on empty tables with no dirty
     * pages of the previous case left to flush.
     */
    void reset(BenchmarkCase benchmarkCase) throws SQLException {
        try (Connection c = connect();
                Statement s = c.createStatement()) {
            s.execute("TRUNCATE " + String.join(", ", benchmarkCase.tables()));
            s.execute("CHECKPOINT");
        }
    }

    /** Gives the planner statistics of the case's tables (which also invalidates the plans cached on them). */
    void analyze(BenchmarkCase benchmarkCase) throws SQLException {
        try (Connection c = connect();
                Statement s = c.createStatement()) {
            for (String table : benchmarkCase.tables()) {
                s.execute("ANALYZE " + table);
            }
        }
    }

    long count(BenchmarkCase benchmarkCase) throws SQLException {
        try (Connection c = connect();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery(benchmarkCase.countQuery())) {
            rs.next();
            return rs.getLong(1);
        }
    }

    /** A fresh pool for one case (autocommit on, as HikariCP and Boot default it). */
    HikariDataSource pool(String name) {
        return pool(name, null);
    }

    /** As {@link #pool(String)}, running {@code initSql} (if not null) on every new connection. */
    HikariDataSource pool(String name, String initSql) {
        HikariConfig config = new HikariConfig();
        if (initSql != null) {
            config.setConnectionInitSql(initSql);
        }
        config.setPoolName("bench-" + name);
        config.setJdbcUrl(url);
        config.setUsername(user);
        config.setPassword(password);
        config.setMaximumPoolSize(2);
        config.setMinimumIdle(2);
        config.setAutoCommit(true);
        return new HikariDataSource(config);
    }

    /** Sumi's PostgreSQL ledger migration, from the sumi-migrations jar. */
    static String ledgerMigration() {
        return BenchSql.migration(LEDGER_MIGRATION);
    }
}
