package io.sumi.outbox;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.sumi.testing.TestDatabase;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Locale;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import javax.sql.DataSource;
import org.flywaydb.core.Flyway;

/**
 * The outbox tests' databases: {@link TestDatabase}'s servers, but a database of their own
 * ({@value #DATABASE_NAME}) on the local services, so that other modules' tests running at the
 * same time (which share {@code sumi_test}) never see, claim or delete these rows. Migrated with
 * Sumi's Flyway scripts, one pool per JVM. A database named by the environment (or a container)
 * is used as given.
 */
final class OutboxTestDatabases {

    static final String DATABASE_NAME = "sumi_outbox_test";

    private static final ConcurrentMap<TestDatabase, HikariDataSource> POOLS = new ConcurrentHashMap<>();

    private OutboxTestDatabases() {
    }

    static DataSource dataSource(TestDatabase database) {
        return POOLS.computeIfAbsent(database, OutboxTestDatabases::open);
    }

    private static HikariDataSource open(TestDatabase database) {
        String[] settings = database.settings();
        String url = settings[0];
        if (database == TestDatabase.H2) {
            url = "jdbc:h2:mem:" + DATABASE_NAME + ";DB_CLOSE_DELAY=-1;MODE=PostgreSQL";
        }
        else if (url.endsWith("/" + TestDatabase.DATABASE_NAME)) {
            createDatabase(database, url, settings[1], settings[2]);
            url = url.substring(0, url.length() - TestDatabase.DATABASE_NAME.length()) + DATABASE_NAME;
        }
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(url);
        config.setUsername(settings[1]);
        config.setPassword(settings[2]);
        config.setMaximumPoolSize(12);
        config.setPoolName("sumi-outbox-test-" + database.name().toLowerCase(Locale.ROOT));
        HikariDataSource dataSource = new HikariDataSource(config);
        Flyway.configure().dataSource(dataSource).locations(database.migrationLocation()).load().migrate();
        return dataSource;
    }

    private static void createDatabase(TestDatabase database, String url, String user, String password) {
        try (Connection admin = DriverManager.getConnection(url, user, password); Statement statement = admin.createStatement()) {
            if (database == TestDatabase.POSTGRESQL) {
                boolean exists = statement.executeQuery("SELECT 1 FROM pg_database WHERE datname = '" + DATABASE_NAME + "'").next();
                if (!exists) {
                    statement.execute("CREATE DATABASE " + DATABASE_NAME);
                }
            }
            else {
                statement.execute("CREATE DATABASE IF NOT EXISTS " + DATABASE_NAME);
            }
        }
        catch (SQLException ex) {
            throw new IllegalStateException("Could not create the test database " + DATABASE_NAME + " on " + url + ": " + ex.getMessage(), ex);
        }
    }
}
