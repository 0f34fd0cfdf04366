package io.sumi.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.Uuid;
import org.jspecify.annotations.Nullable;

/**
 * A real Kafka broker (KRaft, combined broker and controller) as a JVM of its own, started from a
 * class path that holds {@code kafka_2.13} (a test JVM's, where spring-kafka-test brings it), so
 * that it can be killed with SIGKILL, stopped and started again on the same ports and data: the
 * outages an in-process broker cannot have. Clients talk to it over TCP on
 * {@link #bootstrapServers()}. Its output goes to {@code broker.log} in its directory.
 */
public final class KafkaBrokerProcess implements AutoCloseable {

    private final Path dir;
    private final String classpath;
    private final String heap;
    private final List<String> jvmOptions;
    private final boolean startAgainIfExited;
    private final int port = freePort();
    private final int controllerPort = freePort();
    private final Path properties;
    private final Path logback;
    private @Nullable Process process;
    private int starts;

    /**
     * A broker in {@code dir} on {@code classpath}, with {@code heap} ({@code -Xmx}, e.g.
     * {@code 448m}) and {@code jvmOptions} for its JVM; with {@code startAgainIfExited},
     * {@link #awaitReady} starts a broker JVM again that exited while it waited (after a kill, its
     * predecessor's ports may still be held), else it fails at once with the broker's log.
     */
    public KafkaBrokerProcess(
            Path dir, String classpath, String heap, List<String> jvmOptions, boolean startAgainIfExited) {
        this.dir = dir.toAbsolutePath();
        this.classpath = classpath;
        this.heap = heap;
        this.jvmOptions = List.copyOf(jvmOptions);
        this.startAgainIfExited = startAgainIfExited;
        this.properties = this.dir.resolve("server.properties");
        this.logback = this.dir.resolve("logback.xml");
    }

    /**
     * A broker in {@code dir} on this JVM's class path (Surefire's test class path in a test), with
     * the JVM's default options, failing at once if it exits while {@link #awaitReady} waits.
     */
    public static KafkaBrokerProcess onThisClasspath(Path dir, String heap) {
        return new KafkaBrokerProcess(
                dir,
                System.getProperty("surefire.test.class.path", System.getProperty("java.class.path")),
                heap,
                List.of(),
                false);
    }

    /** Writes its configuration, formats its storage, starts it and waits until it answers. */
    public void formatAndStart(Duration timeout) {
        writeConfiguration();
        List<String> format = new ArrayList<>(
                List.of(javaBinary(), "-Xmx256m", "-XX:TieredStopAtLevel=1", "-Dlogback.configurationFile=" + logback));
        format.addAll(List.of("-cp", classpath, "kafka.tools.StorageTool", "format", "-t"));
        format.addAll(List.of(Uuid.randomUuid().toString(), "-c", properties.toString(), "--standalone"));
        Path formatLog = dir.resolve("format.log");
        try {
            Process formatting = new ProcessBuilder(format)
                    .redirectErrorStream(true)
                    .redirectOutput(formatLog.toFile())
                    .start();
            if (!formatting.waitFor(120, TimeUnit.SECONDS) || formatting.exitValue() != 0) {
                formatting.destroyForcibly();
                throw new IllegalStateException("Formatting the broker's storage failed, see " + formatLog);
            }
        } catch (IOException ex) {
            throw new UncheckedIOException(ex);
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(ex);
        }
        start();
        awaitReady(timeout);
    }

    private void writeConfiguration() {
        try {
            Files.createDirectories(dir);
            Files.writeString(
                    properties,
                    String.join(
                            "\n",
                            "process.roles=broker,controller",
                            "node.id=1",
                            "listeners=PLAINTEXT://127.0.0.1:" + port + ",CONTROLLER://127.0.0.1:" + controllerPort,
                            "advertised.listeners=PLAINTEXT://127.0.0.1:" + port,
                            "controller.listener.names=CONTROLLER",
                            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
                            "controller.quorum.bootstrap.servers=127.0.0.1:" + controllerPort,
                            "log.dirs=" + dir.resolve("data"),
                            "num.partitions=6",
                            "offsets.topic.replication.factor=1",
                            "offsets.topic.num.partitions=6",
                            "transaction.state.log.replication.factor=1",
                            "transaction.state.log.min.isr=1",
                            "transaction.state.log.num.partitions=6",
                            "share.coordinator.state.topic.replication.factor=1",
                            "share.coordinator.state.topic.min.isr=1",
                            "group.initial.rebalance.delay.ms=0",
                            // A restarted broker is back in the quorum within seconds.
                            "broker.session.timeout.ms=3000",
                            "broker.heartbeat.interval.ms=500",
                            "auto.create.topics.enable=false",
                            ""));
            // The broker runs on a test class path, whose SLF4J binding is Logback.
            Files.writeString(logback, """
                    <configuration>
                      <appender name="OUT" class="ch.qos.logback.core.ConsoleAppender">
                        <encoder><pattern>%d{HH:mm:ss.SSS} %-5level %logger{36} - %msg%n</pattern></encoder>
                      </appender>
                      <logger name="kafka.server.KafkaRaftServer" level="INFO"/>
                      <logger name="kafka.server.BrokerServer" level="INFO"/>
                      <root level="WARN"><appender-ref ref="OUT"/></root>
                    </configuration>
                    """);
        } catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    /** Starts the broker's JVM on its formatted storage (again, after {@link #kill9} or {@link #close}). */
    public synchronized void start() {
        starts++;
        List<String> command = new ArrayList<>(List.of(javaBinary(), "-Xmx" + heap));
        command.addAll(jvmOptions);
        command.addAll(List.of(
                "-Dlogback.configurationFile=" + logback, "-cp", classpath, "kafka.Kafka", properties.toString()));
        try {
            process = new ProcessBuilder(command)
                    .redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(
                            dir.resolve("broker.log").toFile()))
                    .start();
        } catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    /**
     * Waits until the broker accepts connections and answers an admin request; a broker JVM that
     * exited meanwhile is started again or fails the wait, as the constructor was told.
     */
    public void awaitReady(Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            if (!alive()) {
                if (!startAgainIfExited) {
                    throw new IllegalStateException("The Kafka broker exited, see " + dir.resolve("broker.log"));
                }
                start();
            }
            if (listening(port)) {
                try (Admin admin = admin()) {
                    admin.describeCluster().nodes().get(5, TimeUnit.SECONDS);
                    return;
                } catch (Exception notYet) {
                    // not ready yet
                }
            }
            sleep(250);
        }
        throw new IllegalStateException(
                "The Kafka broker did not come up in " + timeout + " (see " + dir.resolve("broker.log") + ")");
    }

    public void createTopic(String name, int partitions) {
        try (Admin admin = admin()) {
            admin.createTopics(List.of(new NewTopic(name, partitions, (short) 1)))
                    .all()
                    .get(60, TimeUnit.SECONDS);
        } catch (Exception ex) {
            throw new IllegalStateException("Could not create topic " + name, ex);
        }
    }

    /** An admin client of the broker (short timeouts); the caller closes it. */
    public Admin admin() {
        return Admin.create(Map.of(
                AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG,
                bootstrapServers(),
                AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG,
                5000,
                AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG,
                10000));
    }

    public synchronized boolean alive() {
        Process current = process;
        return current != null && current.isAlive();
    }

    /** SIGKILL, then waits until the process and its ports are gone. */
    public synchronized void kill9() {
        Process current = process;
        if (current != null) {
            current.destroyForcibly();
            try {
                current.waitFor(30, TimeUnit.SECONDS);
            } catch (InterruptedException ex) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(ex);
            }
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while ((listening(port) || listening(controllerPort)) && System.nanoTime() < deadline) {
            sleep(100);
        }
    }

    /** How many times its JVM was started. */
    public int starts() {
        return starts;
    }

    public String bootstrapServers() {
        return "127.0.0.1:" + port;
    }

    public Path dir() {
        return dir;
    }

    /** Stops the broker gracefully (SIGTERM), then forcibly after 20 s. */
    @Override
    public synchronized void close() {
        Process current = process;
        if (current == null) {
            return;
        }
        current.destroy();
        try {
            if (!current.waitFor(20, TimeUnit.SECONDS)) {
                current.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            current.destroyForcibly();
        }
    }

    private static String javaBinary() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }

    private static boolean listening(int port) {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 200);
            return true;
        } catch (IOException ex) {
            return false;
        }
    }

    private static int freePort() {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        } catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(ex);
        }
    }
}
