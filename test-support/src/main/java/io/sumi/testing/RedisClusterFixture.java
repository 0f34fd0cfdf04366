package io.sumi.testing;

import static org.awaitility.Awaitility.await;

import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.ClusterTopologyRefreshOptions;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.springframework.data.redis.connection.RedisClusterConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceClientConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * A Redis Cluster of 3 masters with one replica each: 6 {@code redis-server} processes of the
 * installed Redis on 127.0.0.1:7300–7305 ({@code --cluster-enabled yes}, nothing on disk but the
 * cluster's node files under {@code target/redis-cluster}), joined by {@code redis-cli --cluster
 * create … --cluster-replicas 1}. Started once per test JVM ({@link #get}) and stopped when the test
 * run ends (it sits in JUnit's root store). Without {@code redis-server} the tests fail (they never skip).
 *
 * <p>A node timeout of 2 s makes a killed master's replica take over within a few seconds; the
 * replicas may always take over ({@code cluster-replica-validity-factor 0}), however long they were
 * cut off, so the failover tests decide what a replica has.
 */
public final class RedisClusterFixture implements AutoCloseable {

    public static final int FIRST_PORT = 7300;
    public static final int NODES = 6;

    private final Path root;
    private final Map<Integer, Process> servers = new LinkedHashMap<>();
    private final LettuceConnectionFactory factory;

    /** The one cluster of this test JVM. */
    public static RedisClusterFixture get(ExtensionContext context) {
        return context.getRoot()
                .getStore(ExtensionContext.Namespace.GLOBAL)
                .computeIfAbsent(RedisClusterFixture.class, type -> start(), RedisClusterFixture.class);
    }

    private static RedisClusterFixture start() {
        if (!new File("/usr/bin/redis-server").canExecute() && !onPath("redis-server")) {
            throw new IllegalStateException(
                    "No redis-server to start the Redis Cluster with (apt-get install redis-server)");
        }
        return new RedisClusterFixture();
    }

    private RedisClusterFixture() {
        root = Path.of("target", "redis-cluster").toAbsolutePath();
        for (int port = FIRST_PORT; port < FIRST_PORT + NODES; port++) {
            shutDownLeftover(port);
            deleteNodeFiles(port);
            startServer(port);
        }
        for (int port : servers.keySet()) {
            int p = port;
            await().atMost(Duration.ofSeconds(30)).until(() -> cli(p, "ping").contains("PONG"));
        }
        List<String> create = new ArrayList<>(List.of("redis-cli", "--cluster", "create"));
        create.addAll(addresses());
        create.addAll(List.of("--cluster-replicas", "1", "--cluster-yes"));
        String created = run(create);
        if (!created.contains("[OK] All 16384 slots covered")) {
            close();
            throw new IllegalStateException("redis-cli --cluster create failed:\n" + created);
        }
        awaitHealthy();
        ClusterClientOptions options = ClusterClientOptions.builder()
                .topologyRefreshOptions(ClusterTopologyRefreshOptions.builder()
                        .enablePeriodicRefresh(Duration.ofSeconds(1))
                        .enableAllAdaptiveRefreshTriggers()
                        .build())
                .build();
        factory = new LettuceConnectionFactory(
                new RedisClusterConfiguration(addresses()),
                LettuceClientConfiguration.builder()
                        .clientOptions(options)
                        .commandTimeout(Duration.ofSeconds(5))
                        .build());
        factory.afterPropertiesSet();
        factory.start();
    }

    public LettuceConnectionFactory connectionFactory() {
        return factory;
    }

    /** Every node's address ({@code 127.0.0.1:port}), for {@code spring.data.redis.cluster.nodes}. */
    public static List<String> addresses() {
        List<String> nodes = new ArrayList<>();
        for (int port = FIRST_PORT; port < FIRST_PORT + NODES; port++) {
            nodes.add("127.0.0.1:" + port);
        }
        return List.copyOf(nodes);
    }

    /** Waits until every node says the cluster is ok and every master has a replica whose link is up. */
    public void awaitHealthy() {
        await().atMost(Duration.ofSeconds(60))
                .pollInterval(Duration.ofMillis(200))
                .until(() -> {
                    for (int port : servers.keySet()) {
                        if (!cli(port, "cluster", "info").contains("cluster_state:ok")) {
                            return false;
                        }
                    }
                    int linkedReplicas = 0;
                    for (int port : servers.keySet()) {
                        String replication = cli(port, "info", "replication");
                        if (replication.contains("role:slave") && replication.contains("master_link_status:up")) {
                            linkedReplicas++;
                        }
                    }
                    return linkedReplicas == NODES / 2;
                });
    }

    /** The port of the master that serves {@code slot} now, as node {@code askPort} sees it. */
    public int masterOf(int slot, int askPort) {
        for (String line : cli(askPort, "cluster", "nodes").split("\n", -1)) {
            String[] fields = line.trim().split(" ", -1);
            if (fields.length < 9 || !fields[2].contains("master") || fields[2].contains("fail")) {
                continue;
            }
            for (int i = 8; i < fields.length; i++) {
                String[] range = fields[i].split("-", -1);
                if (range[0].startsWith("[")) {
                    continue;
                }
                int from = Integer.parseInt(range[0]);
                int to = range.length > 1 ? Integer.parseInt(range[1]) : from;
                if (slot >= from && slot <= to) {
                    return port(fields[1]);
                }
            }
        }
        throw new IllegalStateException("No master serves slot " + slot);
    }

    /** The port of the replica of the master on {@code masterPort}. */
    public int replicaOf(int masterPort) {
        String masterId = cli(masterPort, "cluster", "myid").trim();
        for (String line : cli(masterPort, "cluster", "nodes").split("\n", -1)) {
            String[] fields = line.trim().split(" ", -1);
            if (fields.length > 3 && fields[2].contains("slave") && fields[3].equals(masterId)) {
                return port(fields[1]);
            }
        }
        throw new IllegalStateException("The master on " + masterPort + " has no replica");
    }

    private Process server(int port) {
        Process server = servers.get(port);
        if (server == null) {
            throw new IllegalArgumentException("No node of the cluster on port " + port);
        }
        return server;
    }

    /** Kills one server at once (SIGKILL): nothing it had not replicated survives. */
    public void kill(int port) {
        Process server = server(port);
        server.destroyForcibly();
        try {
            server.waitFor(10, TimeUnit.SECONDS);
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
    }

    /** Stops (SIGSTOP) or continues (SIGCONT) one server: a stopped replica receives nothing. */
    public void signal(int port, String signal) {
        run(List.of("kill", "-" + signal, Long.toString(server(port).pid())));
    }

    /** Starts a killed server again on its node file: it rejoins as a replica of the master that took over. */
    public void restart(int port) {
        if (server(port).isAlive()) {
            return;
        }
        startServer(port);
        await().atMost(Duration.ofSeconds(30)).until(() -> cli(port, "ping").contains("PONG"));
        awaitHealthy();
    }

    public String cli(int port, String... args) {
        List<String> command = new ArrayList<>(List.of("redis-cli", "-h", "127.0.0.1", "-p", Integer.toString(port)));
        command.addAll(List.of(args));
        return run(command);
    }

    @Override
    public void close() {
        if (factory != null) {
            factory.destroy();
        }
        for (Process server : servers.values()) {
            server.destroy();
        }
        for (Process server : servers.values()) {
            try {
                if (!server.waitFor(10, TimeUnit.SECONDS)) {
                    server.destroyForcibly();
                }
            } catch (InterruptedException ex) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private void startServer(int port) {
        Path dir = root.resolve(Integer.toString(port));
        try {
            Files.createDirectories(dir);
            ProcessBuilder builder = new ProcessBuilder(
                            "redis-server",
                            "--port",
                            Integer.toString(port),
                            "--bind",
                            "127.0.0.1",
                            "--cluster-enabled",
                            "yes",
                            "--cluster-config-file",
                            "nodes.conf",
                            "--cluster-node-timeout",
                            "2000",
                            "--cluster-replica-validity-factor",
                            "0",
                            "--appendonly",
                            "no",
                            "--save",
                            "",
                            "--dir",
                            dir.toString(),
                            "--logfile",
                            dir.resolve("redis.log").toString())
                    .redirectErrorStream(true)
                    .redirectOutput(dir.resolve("stdout.log").toFile());
            servers.put(port, builder.start());
        } catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    /** What a node of an earlier run left: its cluster state and its replication snapshot. */
    private void deleteNodeFiles(int port) {
        Path dir = root.resolve(Integer.toString(port));
        try {
            // A replica keeps the RDB of its last full sync: a node that starts with it is "not empty".
            Files.deleteIfExists(dir.resolve("nodes.conf"));
            Files.deleteIfExists(dir.resolve("dump.rdb"));
        } catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    /** A server of an earlier run whose JVM died before it stopped its cluster. */
    private void shutDownLeftover(int port) {
        if (cli(port, "ping").contains("PONG")) {
            cli(port, "shutdown", "nosave");
            await().atMost(Duration.ofSeconds(10))
                    .until(() -> !cli(port, "ping").contains("PONG"));
        }
    }

    private static int port(String address) {
        // ip:port@cport
        String hostPort = address.split("@", -1)[0];
        return Integer.parseInt(hostPort.substring(hostPort.lastIndexOf(':') + 1));
    }

    private static boolean onPath(String program) {
        for (String dir : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator, -1)) {
            if (new File(dir, program).canExecute()) {
                return true;
            }
        }
        return false;
    }

    private static String run(List<String> command) {
        try {
            Process process =
                    new ProcessBuilder(command).redirectErrorStream(true).start();
            byte[] output = process.getInputStream().readAllBytes();
            if (!process.waitFor(30, TimeUnit.SECONDS)) {
                process.destroyForcibly();
            }
            return new String(output, StandardCharsets.UTF_8);
        } catch (IOException ex) {
            throw new UncheckedIOException(ex);
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(ex);
        }
    }
}
