package io.sumi.benchmarks;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * What the benchmarks share about the databases they run on: Sumi's migration scripts, and the
 * MariaDB side of a run (a harness picks MariaDB by its JDBC URL).
 */
public final class BenchSql {

    private static final Pattern STATEMENT_END = Pattern.compile(";\\s*\n");

    private BenchSql() {}

    /** A migration script of the sumi-migrations jar ({@code db/sumi/<vendor>/...}), as text. */
    public static String migration(String path) {
        try (InputStream in = Objects.requireNonNull(
                BenchSql.class.getClassLoader().getResourceAsStream(path), path + " is not on the classpath")) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    /**
     * A migration script's statements, for a driver that runs one statement per call (MariaDB's):
     * comment lines dropped, split at the semicolons that end lines.
     */
    public static List<String> statements(String script) {
        StringBuilder kept = new StringBuilder();
        for (String line : script.lines().toList()) {
            if (!line.strip().startsWith("--")) {
                kept.append(line).append('\n');
            }
        }
        List<String> statements = new ArrayList<>();
        for (String statement : STATEMENT_END.splitAsStream(kept).toList()) {
            if (!statement.isBlank()) {
                statements.add(statement.strip());
            }
        }
        return statements;
    }

    /** Whether the URL names a MariaDB (or MySQL) server rather than a PostgreSQL. */
    public static boolean isMariaDb(String jdbcUrl) {
        return jdbcUrl.startsWith("jdbc:mariadb:") || jdbcUrl.startsWith("jdbc:mysql:");
    }

    /** Whether the connection is to a MariaDB (or MySQL) server rather than a PostgreSQL. */
    public static boolean isMariaDb(Connection connection) throws SQLException {
        String product = connection.getMetaData().getDatabaseProductName();
        return product.contains("MariaDB") || product.contains("MySQL");
    }

    /** Creates the MariaDB database the URL names if it does not exist (connecting to the server without one). */
    public static void ensureMariaDbDatabase(String jdbcUrl, String user, String password) throws SQLException {
        String name = jdbcUrl.replaceAll("^jdbc:[a-z]+://[^/]+/([^?]*).*$", "$1");
        if (!name.matches("[A-Za-z_][A-Za-z0-9_]*")) {
            throw new IllegalArgumentException("Refusing to create a database named '" + name + "'");
        }
        String server = jdbcUrl.replaceAll("^(jdbc:[a-z]+://[^/]+/)[^?]*(.*)$", "$1$2");
        try (Connection c = DriverManager.getConnection(server, user, password);
                Statement s = c.createStatement()) {
            s.execute("CREATE DATABASE IF NOT EXISTS " + name);
        }
    }

    /** MariaDB's facts printed with a run's results: version, buffer pool and durability settings. */
    public static Map<String, String> mariaDbSettings(Connection connection) throws SQLException {
        String[] names = {
            "version",
            "innodb_buffer_pool_size",
            "innodb_flush_log_at_trx_commit",
            "innodb_log_file_size",
            "log_bin",
            "sync_binlog"
        };
        Map<String, String> settings = new LinkedHashMap<>();
        try (Statement s = connection.createStatement();
                ResultSet rs = s.executeQuery("SELECT @@" + String.join(", @@", names))) {
            rs.next();
            for (int i = 0; i < names.length; i++) {
                settings.put(names[i], rs.getString(i + 1));
            }
        }
        return settings;
    }
}
