package io.sumi.faults.driver;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.GetResponse;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * A private RabbitMQ node from the system's installation ({@code /usr/lib/rabbitmq/bin}, or
 * {@code SUMI_FAULTS_RABBITMQ_BIN}), on ports of its own, with its own data, logs, Erlang cookie
 * and no plugins, so that restarting or killing it disturbs nobody using the shared broker on
 * 5672. Without the binaries the suite fails (it never skips).
 *
 * <p>{@link #restart()} is a graceful restart ({@code rabbitmqctl shutdown}, then
 * {@code rabbitmq-server} again on the same data); {@link #crash()} is {@code kill -9} of the
 * node's {@code beam.smp}, then a start on the same data. Quorum queues keep what they confirmed
 * in both cases (their log is fsynced before a publisher confirm).
 *
 * <p>The topology of the RabbitMQ mode: a topic exchange {@value #EXCHANGE} (the outbox's topic,
 * routing key = the order id) bound with {@code #} to one quorum queue per consumer
 * ({@link #QUEUES}), each with an explicit {@code x-delivery-limit} and the dead-letter exchange
 * {@value #DEAD_LETTER_EXCHANGE}, which routes to {@code <queue>.dlq} (at-least-once
 * dead-lettering, so a dead letter survives a broker restart).
 */
final class RabbitBroker implements Broker {

    static final String EXCHANGE = "orders";
    static final String DEAD_LETTER_EXCHANGE = "orders.dlx";
    static final List<String> QUEUES = List.of("shipments", "charges");

    private final Path dir;
    private final Path bin;
    /**
     * How long a start may take until the node answers. Boots took 10-45 s on the shared 2-core
     * machine, but more than 90 s at a load average of 30 (a full run aborted there in the middle
     * of its graceful restart, the node's log still in its boot).
     */
    private static final Duration BOOT_TIMEOUT = Duration.ofMinutes(4);

    private final int port = Processes.freePort();
    private final int distPort = Processes.freePort();
    private final String nodeName = "sumi-fault-" + port + "@localhost";
    private final int deliveryLimit;
    private Process process;
    private int starts;

    RabbitBroker(Path dir, int deliveryLimit) {
        this.dir = dir;
        this.bin = findBinaries();
        this.deliveryLimit = deliveryLimit;
    }

    static Path findBinaries() {
        String configured = System.getenv("SUMI_FAULTS_RABBITMQ_BIN");
        Path path = Path.of(configured != null && !configured.isBlank() ? configured : "/usr/lib/rabbitmq/bin");
        if (Files.isExecutable(path.resolve("rabbitmq-server")) && Files.isExecutable(path.resolve("rabbitmqctl"))) {
            return path;
        }
        throw new IllegalStateException("The fault suite's RabbitMQ mode needs RabbitMQ's server scripts"
                + " (rabbitmq-server, rabbitmqctl): none in " + path
                + ". Install the rabbitmq-server package or set SUMI_FAULTS_RABBITMQ_BIN to their directory.");
    }

    /** Writes the node's files (config, no plugins, a cookie of its own), starts it and declares the topology. */
    @Override
    public void initAndStart() {
        try {
            Files.createDirectories(dir.resolve("home"));
            Files.createDirectories(dir.resolve("mnesia"));
            Files.createDirectories(dir.resolve("log"));
            // Only this node and its rabbitmqctl calls know this cookie: the shared node is unreachable from here.
            Path cookie = dir.resolve("home").resolve(".erlang.cookie");
            byte[] random = new byte[20];
            new SecureRandom().nextBytes(random);
            StringBuilder text = new StringBuilder();
            for (byte b : random) {
                text.append((char) ('A' + Math.floorMod(b, 26)));
            }
            Files.writeString(cookie, text);
            Files.setPosixFilePermissions(cookie, PosixFilePermissions.fromString("r--------"));
            Files.writeString(dir.resolve("enabled_plugins"), "[].\n");
            // An empty env file keeps /etc/rabbitmq/rabbitmq-env.conf (the shared node's name) out.
            Files.writeString(dir.resolve("rabbitmq-env.conf"), "");
            Files.writeString(
                    dir.resolve("rabbitmq.conf"),
                    String.join(
                            "\n",
                            "listeners.tcp.default = 127.0.0.1:" + port,
                            "loopback_users.guest = true",
                            // The machine is shared: do not let a busy disk stop publishers.
                            "disk_free_limit.absolute = 50MB",
                            ""));
        } catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
        start();
        awaitReady(BOOT_TIMEOUT);
        declareTopology();
    }

    private Map<String, String> environment() {
        Map<String, String> env = new HashMap<>();
        env.put("HOME", dir.resolve("home").toString());
        env.put("RABBITMQ_CONF_ENV_FILE", dir.resolve("rabbitmq-env.conf").toString());
        env.put("RABBITMQ_NODENAME", nodeName);
        env.put("RABBITMQ_NODE_IP_ADDRESS", "127.0.0.1");
        env.put("RABBITMQ_NODE_PORT", Integer.toString(port));
        env.put("RABBITMQ_DIST_PORT", Integer.toString(distPort));
        env.put("RABBITMQ_MNESIA_BASE", dir.resolve("mnesia").toString());
        env.put("RABBITMQ_LOG_BASE", dir.resolve("log").toString());
        env.put("RABBITMQ_ENABLED_PLUGINS_FILE", dir.resolve("enabled_plugins").toString());
        env.put("RABBITMQ_CONFIG_FILE", dir.resolve("rabbitmq.conf").toString());
        env.put("RABBITMQ_ADVANCED_CONFIG_FILE", dir.resolve("advanced.config").toString());
        env.put("ERL_EPMD_ADDRESS", "127.0.0.1");
        // Distribution on loopback only; one scheduler thread per core is the default, keep it.
        env.put("RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS", "-kernel inet_dist_use_interface {127,0,0,1}");
        return env;
    }

    @Override
    public synchronized void start() {
        starts++;
        ProcessBuilder builder = new ProcessBuilder(
                        bin.resolve("rabbitmq-server").toString())
                .directory(dir.toFile())
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(
                        dir.resolve("rabbitmq-server.log").toFile()));
        builder.environment().putAll(environment());
        try {
            process = builder.start();
        } catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    /** Waits until the node accepts AMQP connections (and restarts it if it exited). */
    void awaitReady(Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            if (!alive()) {
                start();
            }
            if (Processes.listening(port)) {
                try (Connection connection = connect()) {
                    if (connection.isOpen()) {
                        return;
                    }
                } catch (Exception ex) {
                    // booting
                }
            }
            Processes.sleep(250);
        }
        throw new IllegalStateException("The RabbitMQ node " + nodeName + " did not come up in " + timeout + " (see "
                + dir.resolve("rabbitmq-server.log") + ")");
    }

    private void declareTopology() {
        try (Connection connection = connect();
                Channel channel = connection.createChannel()) {
            channel.exchangeDeclare(EXCHANGE, "topic", true);
            channel.exchangeDeclare(DEAD_LETTER_EXCHANGE, "direct", true);
            for (String queue : QUEUES) {
                Map<String, Object> arguments = new HashMap<>();
                arguments.put("x-queue-type", "quorum");
                // Explicit, because RabbitMQ 4 gives every quorum queue a delivery limit (20) anyway.
                arguments.put("x-delivery-limit", deliveryLimit);
                arguments.put("x-dead-letter-exchange", DEAD_LETTER_EXCHANGE);
                arguments.put("x-dead-letter-routing-key", queue);
                // At-least-once dead-lettering (RabbitMQ 3.10+) needs reject-publish overflow; no length limit is set.
                arguments.put("x-dead-letter-strategy", "at-least-once");
                arguments.put("x-overflow", "reject-publish");
                channel.queueDeclare(queue, true, false, false, arguments);
                channel.queueBind(queue, EXCHANGE, "#");
                channel.queueDeclare(queue + ".dlq", true, false, false, Map.of("x-queue-type", "quorum"));
                channel.queueBind(queue + ".dlq", DEAD_LETTER_EXCHANGE, queue);
            }
        } catch (Exception ex) {
            throw new IllegalStateException("Could not declare the fault suite's RabbitMQ topology on " + nodeName, ex);
        }
    }

    /** One dead-lettered message: its queue, its key header and why RabbitMQ dead-lettered it. */
    record DeadLetter(String queue, String outboxId, String body, String reason, String deliveryCount) {}

    /**
     * Every message in the dead-letter queues, read without removing it (fetched, then requeued
     * when the channel closes).
     */
    List<DeadLetter> deadLetters() {
        List<DeadLetter> letters = new ArrayList<>();
        try (Connection connection = connect();
                Channel channel = connection.createChannel()) {
            for (String queue : QUEUES) {
                GetResponse response;
                while ((response = channel.basicGet(queue + ".dlq", false)) != null) {
                    AMQP.BasicProperties properties = response.getProps();
                    Map<String, Object> headers = properties.getHeaders() == null ? Map.of() : properties.getHeaders();
                    letters.add(new DeadLetter(
                            queue,
                            String.valueOf(headers.get("outbox-id")),
                            new String(response.getBody(), java.nio.charset.StandardCharsets.UTF_8),
                            String.valueOf(headers.get("x-first-death-reason")),
                            String.valueOf(headers.get("x-delivery-count"))));
                }
            }
        } catch (Exception ex) {
            throw new IllegalStateException("Could not read the dead-letter queues of " + nodeName, ex);
        }
        return letters;
    }

    private Connection publishing;

    @Override
    public synchronized boolean publishDuplicate(String outboxId, String orderId) {
        try {
            if (publishing == null || !publishing.isOpen()) {
                publishing = connect();
            }
            try (Channel channel = publishing.createChannel()) {
                channel.confirmSelect();
                channel.basicPublish(
                        EXCHANGE,
                        orderId,
                        true,
                        new AMQP.BasicProperties.Builder()
                                .contentType("text/plain")
                                .contentEncoding("UTF-8")
                                .deliveryMode(2)
                                .messageId(outboxId)
                                .headers(Map.of("outbox-id", outboxId))
                                .build(),
                        orderId.getBytes(java.nio.charset.StandardCharsets.UTF_8));
                channel.waitForConfirmsOrDie(5000);
            }
            return true;
        } catch (Exception ex) {
            closePublishing();
            return false;
        }
    }

    private synchronized void closePublishing() {
        if (publishing != null) {
            try {
                publishing.abort(1000);
            } catch (RuntimeException ignored) {
                // gone already
            }
            publishing = null;
        }
    }

    /** Messages ready or unacknowledged in a queue, or -1 when the node does not answer. */
    long depth(String queue) {
        try (Connection connection = connect();
                Channel channel = connection.createChannel()) {
            return channel.queueDeclarePassive(queue).getMessageCount();
        } catch (Exception ex) {
            return -1;
        }
    }

    private Connection connect() throws Exception {
        ConnectionFactory factory = new ConnectionFactory();
        factory.setHost("127.0.0.1");
        factory.setPort(port);
        factory.setUsername("guest");
        factory.setPassword("guest");
        factory.setConnectionTimeout(3000);
        factory.setAutomaticRecoveryEnabled(false);
        return factory.newConnection("sumi-fault-driver");
    }

    /** A graceful restart: {@code rabbitmqctl shutdown} (waits for the node's process to end), then a start. */
    @Override
    public void restart() {
        Processes.run(
                List.of(bin.resolve("rabbitmqctl").toString(), "-n", nodeName, "shutdown"),
                dir.resolve("rabbitmqctl.log"),
                Duration.ofMinutes(2),
                environment());
        awaitGone();
        start();
        awaitReady(BOOT_TIMEOUT);
    }

    /** {@code kill -9} of the node's Erlang VM, then a start on the same data. */
    @Override
    public void crash() {
        kill9();
        start();
        awaitReady(BOOT_TIMEOUT);
    }

    /** SIGKILL to the Erlang VM (not only its wrapper script), then waits until the processes and ports are gone. */
    synchronized void kill9() {
        if (process == null) {
            return;
        }
        Optional<ProcessHandle> beam = process.toHandle()
                .descendants()
                .filter(p -> p.info().command().orElse("").endsWith("beam.smp"))
                .findFirst();
        beam.ifPresent(ProcessHandle::destroyForcibly);
        process.toHandle().descendants().forEach(ProcessHandle::destroyForcibly);
        Processes.kill9(process);
        awaitGone();
    }

    private void awaitGone() {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while ((alive() || Processes.listening(port) || Processes.listening(distPort))
                && System.nanoTime() < deadline) {
            Processes.sleep(100);
        }
    }

    @Override
    public synchronized boolean alive() {
        return process != null && process.isAlive();
    }

    @Override
    public synchronized void stop() {
        closePublishing();
        kill9();
    }

    @Override
    public int starts() {
        return starts;
    }

    @Override
    public String address() {
        return "127.0.0.1:" + port + " (node " + nodeName + ")";
    }

    @Override
    public List<String> appArguments() {
        return List.of(
                "--spring.profiles.active=rabbit",
                "--spring.rabbitmq.host=127.0.0.1",
                "--spring.rabbitmq.port=" + port,
                "--spring.rabbitmq.username=guest",
                "--spring.rabbitmq.password=guest");
    }

    String nodeName() {
        return nodeName;
    }
}
