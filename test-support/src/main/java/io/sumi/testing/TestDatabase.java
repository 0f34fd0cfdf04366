package io.sumi.testing;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Locale;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.function.BiConsumer;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.flywaydb.core.Flyway;
import org.springframework.jdbc.datasource.DriverManagerDataSource;
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

    private static final ConcurrentMap<String, HikariDataSource> NAMED_POOLS = new ConcurrentHashMap<>();

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
        return POOLS.computeIfAbsent(this, database -> database.open(settings(), 20, "sumi-test-"));
    }

    /**
     * A shared, migrated pool (at most {@code maxPoolSize} connections) on the database
     * {@link #settings(String) settings(databaseName)} names, so that tests of other modules running
     * at the same time, which share {@value #DATABASE_NAME}, never see these rows.
     */
    public DataSource dataSource(String databaseName, int maxPoolSize) {
        return NAMED_POOLS.computeIfAbsent(
                name() + "/" + databaseName,
                key -> open(settings(databaseName), maxPoolSize, databaseName.replace('_', '-') + "-"));
    }

    /**
     * {url, user, password} of a database of its own named {@code databaseName} on this database's
     * local server (created if missing; for H2 an in-memory database of that name). A database
     * named by the environment, or a container's, is used as given.
     */
    public String[] settings(String databaseName) {
        String[] settings = settings();
        String url = settings[0];
        if (this == H2) {
            url = "jdbc:h2:mem:" + databaseName + ";DB_CLOSE_DELAY=-1;MODE=PostgreSQL";
        } else if (url.endsWith("/" + DATABASE_NAME)) {
            try (Connection admin = DriverManager.getConnection(url, settings[1], settings[2])) {
                createDatabase(admin, databaseName);
            } catch (SQLException ex) {
                throw new IllegalStateException(
                        "Could not create the test database " + databaseName + " on " + url + ": " + ex.getMessage(),
                        ex);
            }
            url = url.substring(0, url.length() - DATABASE_NAME.length()) + databaseName;
        }
        return new String[] {url, settings[1], settings[2]};
    }

    /**
     * A migrated in-memory H2 database of its own, a new one at every call, neither pooled nor
     * shared: for a test whose counts would take in other tests' rows on a shared ledger (pruning
     * and the ledger's statistics span every consumer). End it with {@code SHUTDOWN}.
     */
    public static DataSource privateH2() {
        DataSource dataSource = new DriverManagerDataSource(
                "jdbc:h2:mem:private-" + UUID.randomUUID() + ";DB_CLOSE_DELAY=-1;MODE=PostgreSQL", "sa", "");
        Flyway.configure()
                .dataSource(dataSource)
                .locations(H2.migrationLocation())
                .load()
                .migrate();
        return dataSource;
    }

    /**
     * Gives Spring Boot this database as its DataSource: pass a {@code DynamicPropertyRegistry}'s
     * {@code add} ({@code TestDatabase.POSTGRESQL.registerDataSource(registry::add)}).
     */
    public void registerDataSource(BiConsumer<String, Supplier<Object>> registry) {
        register(settings(), registry);
    }

    /** Gives Spring Boot the database {@link #settings(String) settings(databaseName)} names as its DataSource. */
    public void registerDataSource(String databaseName, BiConsumer<String, Supplier<Object>> registry) {
        register(settings(databaseName), registry);
    }

    private static void register(String[] settings, BiConsumer<String, Supplier<Object>> registry) {
        registry.accept("spring.datasource.url", () -> settings[0]);
        registry.accept("spring.datasource.username", () -> settings[1]);
        registry.accept("spring.datasource.password", () -> settings[2]);
    }

    private HikariDataSource open(String[] settings, int maxPoolSize, String poolNamePrefix) {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(settings[0]);
        config.setUsername(settings[1]);
        config.setPassword(settings[2]);
        config.setMaximumPoolSize(maxPoolSize);
        config.setPoolName(poolNamePrefix + name().toLowerCase(Locale.ROOT));
        HikariDataSource dataSource = new HikariDataSource(config);
        Flyway.configure()
                .dataSource(dataSource)
                .locations(migrationLocation())
                .load()
                .migrate();
        return dataSource;
    }

    private void createDatabase(Connection admin, String databaseName) throws SQLException {
        try (Statement statement = admin.createStatement()) {
            if (this == POSTGRESQL) {
                boolean exists = statement
                        .executeQuery("SELECT 1 FROM pg_database WHERE datname = '" + databaseName + "'")
                        .next();
                if (!exists) {
                    statement.execute("CREATE DATABASE " + databaseName);
                }
            } else {
                statement.execute("CREATE DATABASE IF NOT EXISTS " + databaseName);
            }
        }
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
        try (Connection admin = DriverManager.getConnection(localServerUrl + adminDatabase, localUser, "")) {
            createDatabase(admin, DATABASE_NAME);
            return new String[] {localServerUrl + DATABASE_NAME, localUser, ""};
        } catch (SQLException ex) {
            throw new IllegalStateException(
                    "No " + name() + " database for the tests. Provide one of: the environment variable "
                            + envPrefix + "_URL (with " + envPrefix + "_USER and " + envPrefix
                            + "_PASSWORD); a Docker engine for Testcontainers;"
                            + " or a local server at " + localServerUrl + " reachable as user '" + localUser
                            + "' without a password"
                            + " (.ci/run starts one). Cause: " + ex.getMessage(),
                    ex);
        }
    }

    private String envOr(String suffix, String fallback) {
        String value = System.getenv(envPrefix + suffix);
        return value == null ? fallback : value;
    }

    private static boolean dockerAvailable() {
        try {
            return DockerClientFactory.instance().isDockerAvailable();
        } catch (RuntimeException | LinkageError ex) {
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
