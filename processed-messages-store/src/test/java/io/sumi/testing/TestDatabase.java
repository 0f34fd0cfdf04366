package io.sumi.testing;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Locale;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import javax.sql.DataSource;
import org.flywaydb.core.Flyway;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.mariadb.MariaDBContainer;
import org.testcontainers.postgresql.PostgreSQLContainer;

/**
 * The databases Sumi's tests run against, and how a test gets one:
 * <ol>
 *   <li>an environment variable naming it ({@code SUMI_TEST_POSTGRES_URL},
 *   {@code SUMI_TEST_MARIADB_URL}, with optional {@code _USER} and {@code _PASSWORD}), if set;</li>
 *   <li>else a Testcontainers container, when a Docker engine answers;</li>
 *   <li>else the local service on its default port (database {@code sumi_test}, created if missing);</li>
 *   <li>else the test fails with a message that says how to provide one. Tests never skip.</li>
 * </ol>
 * Each database gets one pool per JVM, with Sumi's migrations applied.
 */
public enum TestDatabase {

    POSTGRESQL("postgresql", "SUMI_TEST_POSTGRES", "jdbc:postgresql://127.0.0.1:5432/", "postgres", "postgres"),
    MARIADB("mariadb", "SUMI_TEST_MARIADB", "jdbc:mariadb://127.0.0.1:3306/", "root", "mysql"),
    H2("h2", "SUMI_TEST_H2", "jdbc:h2:mem:", "sa", "");

    public static final String DATABASE_NAME = "sumi_test";

    private static final ConcurrentMap<TestDatabase, HikariDataSource> POOLS = new ConcurrentHashMap<>();

    private final String vendor;
    private final String envPrefix;
    private final String localServerUrl;
    private final String localUser;
    private final String adminDatabase;

    TestDatabase(String vendor, String envPrefix, String localServerUrl, String localUser, String adminDatabase) {
        this.vendor = vendor;
        this.envPrefix = envPrefix;
        this.localServerUrl = localServerUrl;
        this.localUser = localUser;
        this.adminDatabase = adminDatabase;
    }

    /** The Flyway location of Sumi's scripts for this database. */
    public String migrationLocation() {
        return "classpath:db/sumi/" + vendor;
    }

    /** A shared, migrated pool on this database (at most 20 connections). */
    public DataSource dataSource() {
        return POOLS.computeIfAbsent(this, TestDatabase::open);
    }

    private HikariDataSource open() {
        String[] settings = settings();
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(settings[0]);
        config.setUsername(settings[1]);
        config.setPassword(settings[2]);
        config.setMaximumPoolSize(20);
        config.setPoolName("sumi-test-" + name().toLowerCase(Locale.ROOT));
        HikariDataSource dataSource = new HikariDataSource(config);
        Flyway.configure().dataSource(dataSource).locations(migrationLocation()).load().migrate();
        return dataSource;
    }

    /** {url, user, password}. */
    public String[] settings() {
        String url = System.getenv(envPrefix + "_URL");
        if (url != null && !url.isBlank()) {
            return new String[] {url, envOr("_USER", localUser), envOr("_PASSWORD", "")};
        }
        if (this == H2) {
            return new String[] {"jdbc:h2:mem:" + DATABASE_NAME + ";DB_CLOSE_DELAY=-1;MODE=PostgreSQL", "sa", ""};
        }
        if (dockerAvailable()) {
            return startContainer();
        }
        try (Connection admin = DriverManager.getConnection(localServerUrl + adminDatabase, localUser, "");
                Statement statement = admin.createStatement()) {
            if (this == POSTGRESQL) {
                boolean exists = statement.executeQuery("SELECT 1 FROM pg_database WHERE datname = '" + DATABASE_NAME + "'").next();
                if (!exists) {
                    statement.execute("CREATE DATABASE " + DATABASE_NAME);
                }
            }
            else {
                statement.execute("CREATE DATABASE IF NOT EXISTS " + DATABASE_NAME);
            }
            return new String[] {localServerUrl + DATABASE_NAME, localUser, ""};
        }
        catch (SQLException ex) {
            throw new IllegalStateException("No " + name() + " database for the tests. Provide one of: the environment variable "
                    + envPrefix + "_URL (with " + envPrefix + "_USER and " + envPrefix + "_PASSWORD); a Docker engine for Testcontainers;"
                    + " or a local server at " + localServerUrl + " reachable as user '" + localUser + "' without a password"
                    + " (.ci/run starts one). Cause: " + ex.getMessage(), ex);
        }
    }

    private String envOr(String suffix, String fallback) {
        String value = System.getenv(envPrefix + suffix);
        return value == null ? fallback : value;
    }

    private static boolean dockerAvailable() {
        try {
            return DockerClientFactory.instance().isDockerAvailable();
        }
        catch (RuntimeException | LinkageError ex) {
            return false;
        }
    }

    @SuppressWarnings("resource") // lives as long as the JVM; Testcontainers' reaper removes it
    private String[] startContainer() {
        if (this == POSTGRESQL) {
            PostgreSQLContainer container = new PostgreSQLContainer("postgres:16-alpine");
            container.start();
            return new String[] {container.getJdbcUrl(), container.getUsername(), container.getPassword()};
        }
        MariaDBContainer container = new MariaDBContainer("mariadb:11");
        container.start();
        return new String[] {container.getJdbcUrl(), container.getUsername(), container.getPassword()};
    }
}
