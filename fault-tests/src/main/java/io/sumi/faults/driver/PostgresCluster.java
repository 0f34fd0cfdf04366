package io.sumi.faults.driver;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/**
 * A private PostgreSQL cluster from the system's binaries ({@code initdb}, {@code pg_ctl}), on a
 * port of its own, so that restarting it disturbs nobody else. The binaries are taken from
 * {@code SUMI_FAULTS_PG_BIN}, else the newest {@code /usr/lib/postgresql/<version>/bin}; without
 * them the suite fails (it never skips).
 */
final class PostgresCluster {

    private final Path bin;
    private final Path dir;
    private final Path data;
    private final Path log;
    private final int port;
    private final boolean logical;

    /**
     * @param logical whether the cluster runs {@code wal_level=logical} (the CDC mode: the outbox
     *     is streamed from a replication slot)
     */
    PostgresCluster(Path dir, boolean logical) {
        this.logical = logical;
        this.bin = findBinaries();
        this.dir = dir;
        this.data = dir.resolve("data");
        this.log = dir.resolve("pg_ctl.log");
        this.port = Processes.freePort();
    }

    static Path findBinaries() {
        String configured = System.getenv("SUMI_FAULTS_PG_BIN");
        if (configured != null && !configured.isBlank()) {
            Path path = Path.of(configured);
            if (Files.isExecutable(path.resolve("initdb"))) {
                return path;
            }
            throw new IllegalStateException("SUMI_FAULTS_PG_BIN=" + configured + " has no executable initdb");
        }
        Path root = Path.of("/usr/lib/postgresql");
        if (Files.isDirectory(root)) {
            try (Stream<Path> versions = Files.list(root)) {
                Path found = versions.map(v -> v.resolve("bin"))
                        .filter(b -> Files.isExecutable(b.resolve("initdb")) && Files.isExecutable(b.resolve("pg_ctl")))
                        .max(Comparator.comparing(
                                b -> versionOf(b.getParent().getFileName().toString())))
                        .orElse(null);
                if (found != null) {
                    return found;
                }
            } catch (IOException ex) {
                throw new UncheckedIOException(ex);
            }
        }
        throw new IllegalStateException(
                "The fault suite needs PostgreSQL's server binaries (initdb, pg_ctl): none under " + root
                        + ". Install the postgresql server package or set SUMI_FAULTS_PG_BIN to their directory.");
    }

    private static int versionOf(String name) {
        try {
            return Integer.parseInt(name.replaceAll("[^0-9].*", ""));
        } catch (NumberFormatException ex) {
            return 0;
        }
    }

    void initAndStart() {
        try {
            Files.createDirectories(dir);
        } catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
        Processes.chownToPostgres(dir);
        Processes.run(
                Processes.asPostgres(List.of(
                        bin.resolve("initdb").toString(),
                        "-D",
                        data.toString(),
                        "-U",
                        "postgres",
                        "--auth=trust",
                        "--no-sync",
                        "-E",
                        "UTF8")),
                dir.resolveSibling("initdb.log"),
                Duration.ofMinutes(2));
        start();
    }

    void start() {
        Processes.run(
                Processes.asPostgres(List.of(
                        bin.resolve("pg_ctl").toString(),
                        "-D",
                        data.toString(),
                        "-l",
                        log.toString(),
                        "-o",
                        "-p " + port + " -k " + dir + " -c listen_addresses=127.0.0.1 -c max_connections=200"
                                + (logical
                                        ? " -c wal_level=logical -c max_replication_slots=4 -c max_wal_senders=8"
                                        : ""),
                        "-w",
                        "-t",
                        "60",
                        "start")),
                dir.resolveSibling("pg_ctl-driver.log"),
                Duration.ofSeconds(90));
    }

    /** {@code pg_ctl stop -m fast}: every session is disconnected, open transactions roll back. */
    void stopFast() {
        Processes.run(
                Processes.asPostgres(List.of(
                        bin.resolve("pg_ctl").toString(),
                        "-D",
                        data.toString(),
                        "-m",
                        "fast",
                        "-w",
                        "-t",
                        "60",
                        "stop")),
                dir.resolveSibling("pg_ctl-driver.log"),
                Duration.ofSeconds(90));
    }

    void stopQuietly() {
        try {
            Processes.run(
                    Processes.asPostgres(List.of(
                            bin.resolve("pg_ctl").toString(), "-D", data.toString(), "-m", "immediate", "-w", "stop")),
                    dir.resolveSibling("pg_ctl-driver.log"),
                    Duration.ofSeconds(60));
        } catch (RuntimeException ex) {
            // already stopped
        }
    }

    String jdbcUrl() {
        return "jdbc:postgresql://127.0.0.1:" + port + "/postgres";
    }
}
