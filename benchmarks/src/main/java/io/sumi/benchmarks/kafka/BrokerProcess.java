package io.sumi.benchmarks.kafka;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.Uuid;

/**
 * A real Kafka broker (KRaft, combined broker and controller) as a JVM of its own, started from this
 * JVM's classpath (which holds {@code kafka_2.13}), as docs/../ENVIRONMENT.md describes. The
 * benchmark's consumers and producer talk to it over TCP, as an application would.
 */
final class BrokerProcess implements AutoCloseable {

    private final Path dir;
    private final int port = freePort();
    private final int controllerPort = freePort();
    private Process process;

    BrokerProcess(Path dir) {
        this.dir = dir;
    }

    void start(String heap) throws IOException, InterruptedException {
        Files.createDirectories(dir);
        Path properties = dir.resolve("server.properties");
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
                        "share.coordinator.state.topic.replication.factor=1",
                        "share.coordinator.state.topic.min.isr=1",
                        "group.initial.rebalance.delay.ms=0",
                        "auto.create.topics.enable=false",
                        ""));
        Path logback = dir.resolve("logback.xml");
        Files.writeString(logback, """
                <configuration>
                  <appender name="OUT" class="ch.qos.logback.core.ConsoleAppender">
                    <encoder><pattern>%d{HH:mm:ss.SSS} %-5level %logger{36} - %msg%n</pattern></encoder>
                  </appender>
                  <root level="WARN"><appender-ref ref="OUT"/></root>
                </configuration>
                """);
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        String classpath = System.getProperty("java.class.path");
        Process format = new ProcessBuilder(
                        java,
                        "-Xmx256m",
                        "-XX:TieredStopAtLevel=1",
                        "-Dlogback.configurationFile=" + logback,
                        "-cp",
                        classpath,
                        "kafka.tools.StorageTool",
                        "format",
                        "-t",
                        Uuid.randomUuid().toString(),
                        "-c",
                        properties.toString(),
                        "--standalone")
                .redirectErrorStream(true)
                .redirectOutput(dir.resolve("format.log").toFile())
                .start();
        if (!format.waitFor(120, TimeUnit.SECONDS) || format.exitValue() != 0) {
            throw new IllegalStateException("Formatting the broker's storage failed, see " + dir.resolve("format.log"));
        }
        process = new ProcessBuilder(
                        java,
                        "-Xmx" + heap,
                        "-Dlogback.configurationFile=" + logback,
                        "-cp",
                        classpath,
                        "kafka.Kafka",
                        properties.toString())
                .redirectErrorStream(true)
                .redirectOutput(dir.resolve("broker.log").toFile())
                .start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(300);
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                throw new IllegalStateException("The broker exited, see " + dir.resolve("broker.log"));
            }
            try (Admin admin = admin()) {
                admin.describeCluster().nodes().get(5, TimeUnit.SECONDS);
                return;
            } catch (Exception notYet) {
                Thread.sleep(250);
            }
        }
        throw new IllegalStateException("The broker did not come up, see " + dir.resolve("broker.log"));
    }

    void createTopic(String name, int partitions) {
        try (Admin admin = admin()) {
            admin.createTopics(List.of(new NewTopic(name, partitions, (short) 1)))
                    .all()
                    .get(60, TimeUnit.SECONDS);
        } catch (Exception ex) {
            throw new IllegalStateException("Could not create topic " + name, ex);
        }
    }

    Admin admin() {
        return Admin.create(Map.of(
                AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers(),
                AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 5000,
                AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 10000));
    }

    String bootstrapServers() {
        return "127.0.0.1:" + port;
    }

    @Override
    public void close() {
        if (process != null) {
            process.destroy();
            try {
                if (!process.waitFor(20, TimeUnit.SECONDS)) {
                    process.destroyForcibly();
                }
            } catch (InterruptedException ex) {
                Thread.currentThread().interrupt();
                process.destroyForcibly();
            }
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
