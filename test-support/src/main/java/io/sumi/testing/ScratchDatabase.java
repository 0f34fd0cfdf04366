package io.sumi.testing;

import javax.sql.DataSource;
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

    private final JdbcTemplate admin;
    private final String name;
    private final DataSource dataSource;

    private ScratchDatabase(JdbcTemplate admin, String name, DataSource dataSource) {
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
                admin, name, new DriverManagerDataSource(serverUrl + name + params, settings[1], settings[2]));
    }

    /** The database's name (e.g. for {@code information_schema} queries). */
    public String name() {
        return name;
    }

    /** Connections to it, each new (no pool): nothing holds it open after {@link #close()}. */
    public DataSource dataSource() {
        return dataSource;
    }

    @Override
    public void close() {
        admin.execute("DROP DATABASE IF EXISTS " + name);
    }
}
