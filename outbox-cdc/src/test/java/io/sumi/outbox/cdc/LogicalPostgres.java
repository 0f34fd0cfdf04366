package io.sumi.outbox.cdc;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.flywaydb.core.Flyway;

/**
 * A PostgreSQL server with {@code wal_level = logical} for the CDC tests. {@code SUMI_CDC_PG_URL}
 * (a JDBC URL of such a server's maintenance database, user {@code SUMI_CDC_PG_USER}, default
 * postgres, trust or {@code SUMI_CDC_PG_PASSWORD}) if set; else a private cluster from the
 * system's binaries ({@code SUMI_CDC_PG_BIN}, else the newest {@code /usr/lib/postgresql/<v>/bin})
 * in {@code target/cdc-postgres}, on a free port, owned by the {@code postgres} user when the
 * tests run as root, started once per test JVM and stopped when it exits. The machine's shared
 * server runs {@code wal_level = replica}, and restarting it would disconnect everyone. Without
 * binaries and without the variable the tests fail: they never skip.
 */
final class LogicalPostgres {

    private static final boolean ROOT = "root".equals(System.getProperty("user.name"));

    private static LogicalPostgres instance;

    private final String baseUrl;
    private final String user;
    private final String password;
    /** The private cluster's binaries and data directory; null for a server of {@code SUMI_CDC_PG_URL}. */
    private final Path bin;

    private final Path data;
    private int databases;

    private LogicalPostgres(String baseUrl, String user, String password, Path bin, Path data) {
        this.baseUrl = baseUrl;
        this.user = user;
        this.password = password;
        this.bin = bin;
        this.data = data;
    }

    static synchronized LogicalPostgres get() {
        if (instance == null) {
            String url = System.getenv("SUMI_CDC_PG_URL");
            if (url != null && !url.isBlank()) {
                String user = System.getenv().getOrDefault("SUMI_CDC_PG_USER", "postgres");
                String password = System.getenv().getOrDefault("SUMI_CDC_PG_PASSWORD", "");
                instance = new LogicalPostgres(url.substring(0, url.lastIndexOf('/')), user, password, null, null);
            } else {
                instance = startPrivateCluster();
            }
        }
        return instance;
    }

    /** A fresh database with Sumi's migrations applied; its JDBC URL. */
    synchronized String newDatabase(String prefix) {
        String name = prefix + "_" + ProcessHandle.current().pid() + "_" + (++databases);
        try (Connection connection = DriverManager.getConnection(baseUrl + "/postgres", user, password);
                Statement statement = connection.createStatement()) {
            statement.execute("DROP DATABASE IF EXISTS " + name);
            statement.execute("CREATE DATABASE " + name);
        } catch (SQLException ex) {
            throw new IllegalStateException(ex);
        }
        String url = baseUrl + "/" + name;
        Flyway.configure()
                .dataSource(url, user, password)
                .locations("classpath:db/sumi/postgresql")
                .load()
                .migrate();
        return url;
    }

    HikariDataSource dataSource(String url) {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(url);
        config.setUsername(user);
        config.setPassword(password);
        config.setMaximumPoolSize(8);
        return new HikariDataSource(config);
    }

    String user() {
        return user;
    }

    String password() {
        return password;
    }

    /**
     * Stops the private cluster as a crash would ({@code pg_ctl -m immediate}: every connection cut,
     * no shutdown checkpoint, so the slot's state is what the last checkpoint saved) and starts it
     * again with the options of its first start, on the same port. Refused for a server of {@code SUMI_CDC_PG_URL},
     * which this class does not own.
     */
    synchronized void restart() {
        if (data == null) {
            throw new IllegalStateException("Restarting PostgreSQL needs the private cluster: unset SUMI_CDC_PG_URL");
        }
        // restart takes the options of the first start again (postmaster.opts): the port, wal_level.
        pgCtl(
                bin,
                data,
                false,
                "-l",
                data.getParent().resolve("server.log").toString(),
                "-m",
                "immediate",
                "-w",
                "-t",
                "60",
                "restart");
    }

    /** Runs SQL as the superuser on the database at {@code url}. */
    void execute(String url, String sql) {
        try (Connection connection = DriverManager.getConnection(url, user, password);
                Statement statement = connection.createStatement()) {
            statement.execute(sql);
        } catch (SQLException ex) {
            throw new IllegalStateException(ex);
        }
    }

    // ---------------------------------------------------------------- the private cluster

    private static LogicalPostgres startPrivateCluster() {
        Path bin = binaries();
        Path dir = Path.of("target", "cdc-postgres").toAbsolutePath();
        Path data = dir.resolve("data");
        int port = freePort();
        try {
            if (Files.exists(dir)) {
                pgCtl(bin, data, true, "-m", "immediate", "stop");
                try (Stream<Path> walk = Files.walk(dir)) {
                    walk.sorted(Comparator.reverseOrder())
                            .forEach(p -> p.toFile().delete());
                }
            }
            Files.createDirectories(dir);
        } catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
        if (ROOT) {
            run(List.of("chown", "-R", "postgres:postgres", dir.toString()), false, false);
        }
        run(
                List.of(
                        bin.resolve("initdb").toString(),
                        "-D",
                        data.toString(),
                        "-U",
                        "postgres",
                        "--auth=trust",
                        "--no-sync",
                        "-E",
                        "UTF8"),
                true,
                false);
        pgCtl(
                bin,
                data,
                false,
                "-l",
                dir.resolve("server.log").toString(),
                "-o",
                "-p " + port + " -k " + dir + " -c listen_addresses=127.0.0.1 -c wal_level=logical"
                        + " -c max_replication_slots=20 -c max_wal_senders=20 -c max_connections=200 -c fsync=off",
                "-w",
                "-t",
                "60",
                "start");
        Runtime.getRuntime().addShutdownHook(new Thread(() -> pgCtl(bin, data, true, "-m", "immediate", "-w", "stop")));
        return new LogicalPostgres("jdbc:postgresql://127.0.0.1:" + port, "postgres", "", bin, data);
    }

    private static Path binaries() {
        String configured = System.getenv("SUMI_CDC_PG_BIN");
        if (configured != null && !configured.isBlank()) {
            return Path.of(configured);
        }
        Path root = Path.of("/usr/lib/postgresql");
        try (Stream<Path> versions = Files.list(root)) {
            return versions.map(v -> v.resolve("bin"))
                    .filter(b -> Files.isExecutable(b.resolve("initdb")))
                    .max(Comparator.comparingInt(b -> Integer.parseInt(
                            b.getParent().getFileName().toString().replaceAll("[^0-9].*", "0"))))
                    .orElseThrow();
        } catch (IOException | RuntimeException ex) {
            throw new IllegalStateException(
                    "The CDC tests need a PostgreSQL server with wal_level=logical: set"
                            + " SUMI_CDC_PG_URL, or install the server binaries (initdb, pg_ctl) under " + root
                            + " or in SUMI_CDC_PG_BIN",
                    ex);
        }
    }

    /** {@code pg_ctl -D data args…}, as the postgres user when the tests run as root. */
    private static void pgCtl(Path bin, Path data, boolean quiet, String... args) {
        List<String> command = new ArrayList<>(List.of(bin.resolve("pg_ctl").toString(), "-D", data.toString()));
        command.addAll(List.of(args));
        run(command, true, quiet);
    }

    private static void run(List<String> command, boolean asPostgres, boolean quiet) {
        List<String> full = new ArrayList<>();
        if (asPostgres && ROOT) {
            full.addAll(List.of("runuser", "-u", "postgres", "--"));
        }
        full.addAll(command);
        try {
            Process process = new ProcessBuilder(full)
                    .redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                    .start();
            if (!process.waitFor(120, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                throw new IllegalStateException("Timed out: " + full);
            }
            if (process.exitValue() != 0 && !quiet) {
                throw new IllegalStateException("Failed (exit " + process.exitValue() + "): " + full);
            }
        } catch (IOException ex) {
            if (!quiet) {
                throw new UncheckedIOException(ex);
            }
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(ex);
        }
    }

    private static int freePort() {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        } catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }
}
