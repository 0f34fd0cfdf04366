package io.sumi.testing;

import java.util.Collections;
import java.util.List;
import javax.sql.DataSource;
import org.flywaydb.core.Flyway;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DriverManagerDataSource;

/**
 * An empty database of its own, next to the test database on the same server (MariaDB or
 * PostgreSQL), created fresh (dropped first if a previous run left it) and dropped on
 * {@link #close()}: for tests that must build a schema by hand, e.g. a table as an older migration
 * created it, without Sumi's migrations applied. Unlike {@link TestDatabase#settings(String)}, it
 * is derived from whatever URL names the test database, the environment's included.
 */
public final class ScratchDatabase implements AutoCloseable {

    private final TestDatabase server;
    private final JdbcTemplate admin;
    private final String name;
    private final DataSource dataSource;

    private ScratchDatabase(TestDatabase server, JdbcTemplate admin, String name, DataSource dataSource) {
        this.server = server;
        this.admin = admin;
        this.name = name;
        this.dataSource = dataSource;
    }

    /**
     * Creates the database named after the test database plus {@code suffix}.
     *
     * @throws IllegalArgumentException for H2, which has no server to create databases on
     */
    public static ScratchDatabase create(TestDatabase server, String suffix) {
        if (server == TestDatabase.H2) {
            throw new IllegalArgumentException("H2 has no server to create a scratch database on");
        }
        String[] settings = server.settings();
        String url = settings[0];
        int query = url.indexOf('?');
        String base = query < 0 ? url : url.substring(0, query);
        String params = query < 0 ? "" : url.substring(query);
        String name = base.substring(base.lastIndexOf('/') + 1) + suffix;
        JdbcTemplate admin = new JdbcTemplate(new DriverManagerDataSource(url, settings[1], settings[2]));
        admin.execute("DROP DATABASE IF EXISTS " + name);
        admin.execute("CREATE DATABASE " + name);
        String serverUrl = base.substring(0, base.lastIndexOf('/') + 1);
        return new ScratchDatabase(
                server, admin, name, new DriverManagerDataSource(serverUrl + name + params, settings[1], settings[2]));
    }

    /** The database's name (e.g. for {@code information_schema} queries). */
    public String name() {
        return name;
    }

    /** Connections to it, each new (no pool): nothing holds it open after {@link #close()}. */
    public DataSource dataSource() {
        return dataSource;
    }

    /**
     * Applies Sumi's migrations for this server as in an application whose schema predates them:
     * Flyway baselines the existing schema, then its repeatable scripts run.
     */
    public void migrateAsAnUpgrade() {
        Flyway.configure()
                .dataSource(dataSource)
                .locations(server.migrationLocation())
                .baselineOnMigrate(true)
                .load()
                .migrate();
    }

    /** The collations of {@code table}'s {@code columns}, in the order of the columns' names. */
    public List<String> collations(String table, String... columns) {
        return new JdbcTemplate(dataSource)
                .queryForList(
                        "SELECT collation_name FROM information_schema.columns WHERE table_schema = ? AND table_name = ?"
                                + " AND column_name IN (" + String.join(", ", Collections.nCopies(columns.length, "?"))
                                + ") ORDER BY column_name",
                        String.class,
                        concat(name, table, columns));
    }

    private static Object[] concat(String schema, String table, String[] columns) {
        Object[] arguments = new Object[columns.length + 2];
        arguments[0] = schema;
        arguments[1] = table;
        System.arraycopy(columns, 0, arguments, 2, columns.length);
        return arguments;
    }

    @Override
    public void close() {
        admin.execute("DROP DATABASE IF EXISTS " + name);
    }
}
