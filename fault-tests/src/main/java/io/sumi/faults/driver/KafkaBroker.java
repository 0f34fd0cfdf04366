package io.sumi.faults.driver;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.Uuid;

/**
 * A real Kafka broker (KRaft, combined broker and controller) as a JVM of its own, so that it can
 * be killed with SIGKILL and started again on the same ports and data.
 */
final class KafkaBroker implements Broker {

    private final Path dir;
    private final String classpath;
    private final int port = Processes.freePort();
    private final int controllerPort = Processes.freePort();
    private final Path properties;
    private final Path logback;
    private Process process;
    private int starts;

    private final String topic;
    private final int partitions;

    KafkaBroker(Path dir, String classpath, String topic, int partitions) {
        this.topic = topic;
        this.partitions = partitions;
        this.dir = dir;
        this.classpath = classpath;
        this.properties = dir.resolve("server.properties");
        this.logback = dir.resolve("logback.xml");
    }

    @Override
    public void initAndStart() {
        formatAndStart();
        awaitReady(Duration.ofSeconds(90));
        createTopic(topic, partitions);
    }

    @Override
    public void crash() {
        kill9();
        start();
        awaitReady(Duration.ofSeconds(90));
    }

    @Override
    public void restart() {
        throw new UnsupportedOperationException("The Kafka mode crashes its broker; it has no graceful restart");
    }

    @Override
    public String address() {
        return bootstrapServers();
    }

    @Override
    public List<String> appArguments() {
        return List.of(
                "--spring.kafka.bootstrap-servers=" + bootstrapServers(),
                // The RabbitMQ mode's client stays off: no connection to anyone's RabbitMQ.
                "--spring.autoconfigure.exclude=org.springframework.boot.amqp.autoconfigure.RabbitAutoConfiguration");
    }

    void formatAndStart() {
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
                            "broker.session.timeout.ms=3000",
                            "broker.heartbeat.interval.ms=500",
                            "auto.create.topics.enable=false",
                            ""));
            // The broker runs on the module's classpath, whose SLF4J binding is Logback.
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
        Processes.run(
                List.of(
                        Processes.javaBinary(),
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
                        "--standalone"),
                dir.resolve("format.log"),
                Duration.ofMinutes(2));
        start();
    }

    @Override
    public synchronized void start() {
        starts++;
        try {
            process = new ProcessBuilder(
                            Processes.javaBinary(),
                            "-Xmx448m",
                            "-XX:+UseSerialGC",
                            "-XX:TieredStopAtLevel=1",
                            "-Dlogback.configurationFile=" + logback,
                            "-cp",
                            classpath,
                            "kafka.Kafka",
                            properties.toString())
                    .redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(
                            dir.resolve("broker.log").toFile()))
                    .start();
        } catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    /** Waits until the broker accepts connections and answers an admin request. */
    void awaitReady(Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            if (!alive()) {
                start();
            }
            if (Processes.listening(port)) {
                try (Admin admin = admin()) {
                    admin.describeCluster().nodes().get(5, TimeUnit.SECONDS);
                    return;
                } catch (Exception ex) {
                    // not ready yet
                }
            }
            Processes.sleep(250);
        }
        throw new IllegalStateException(
                "The Kafka broker did not come up in " + timeout + " (see " + dir.resolve("broker.log") + ")");
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

    private Admin admin() {
        return Admin.create(Map.of(
                AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG,
                bootstrapServers(),
                AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG,
                5000,
                AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG,
                10000));
    }

    @Override
    public synchronized boolean alive() {
        return process != null && process.isAlive();
    }

    /** SIGKILL, then waits until the process and its ports are gone. */
    synchronized void kill9() {
        Processes.kill9(process);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while ((Processes.listening(port) || Processes.listening(controllerPort)) && System.nanoTime() < deadline) {
            Processes.sleep(100);
        }
    }

    @Override
    public synchronized void stop() {
        if (process != null) {
            Processes.kill9(process);
        }
    }

    @Override
    public int starts() {
        return starts;
    }

    String bootstrapServers() {
        return "127.0.0.1:" + port;
    }
}
