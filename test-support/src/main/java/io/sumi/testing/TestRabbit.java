package io.sumi.testing;

import java.io.IOException;
import java.net.Socket;
import java.nio.charset.Charset;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.springframework.amqp.core.BindingBuilder;
import org.springframework.amqp.core.Declarable;
import org.springframework.amqp.core.Declarables;
import org.springframework.amqp.core.DirectExchange;
import org.springframework.amqp.core.Queue;
import org.springframework.amqp.core.QueueBuilder;
import org.springframework.amqp.rabbit.connection.CachingConnectionFactory;

/**
 * The shared RabbitMQ the tests talk to (127.0.0.1:5672, guest/guest, or {@code SUMI_TEST_RABBIT_HOST}
 * / {@code SUMI_TEST_RABBIT_PORT}). Tests never skip: a broker that does not answer fails them with
 * a message that says what to start.
 */
public final class TestRabbit {

    public static final String HOST = env("SUMI_TEST_RABBIT_HOST", "127.0.0.1");
    public static final int PORT = Integer.parseInt(env("SUMI_TEST_RABBIT_PORT", "5672"));

    private TestRabbit() {}

    private static String env(String name, String fallback) {
        String value = System.getenv(name);
        return value == null || value.isBlank() ? fallback : value;
    }

    /** Fails at once, with what to do, when no broker answers. */
    @SuppressWarnings("try") // the socket is opened only to see that the broker answers
    public static void requireBroker() {
        try (Socket socket = new Socket(HOST, PORT)) {
            // answers
        } catch (IOException ex) {
            throw new IllegalStateException(
                    "RabbitMQ does not answer on " + HOST + ":" + PORT + " (" + ex.getMessage() + "). Start it"
                            + " (e.g. `service rabbitmq-server start`) or point SUMI_TEST_RABBIT_HOST/PORT at one;"
                            + " these tests never skip");
        }
    }

    /**
     * Quorum queues {@code prefix} + each of {@code names}, with {@code x-delivery-limit}
     * {@code deliveryLimit}, each dead-lettering to its own queue of that name plus {@code ".dlq"}
     * (non-durable) through the direct exchange {@code prefix + "dlx"} (routing key: the name): the queues on which RabbitMQ counts
     * every requeue toward the limit, as RabbitMQ 4 does by default.
     */
    public static Declarables quorumQueuesWithDeadLetters(String prefix, List<String> names, int deliveryLimit) {
        DirectExchange dlx = new DirectExchange(prefix + "dlx", false, true);
        List<Declarable> declarables = new ArrayList<>(List.of(dlx));
        for (String name : names) {
            Queue queue = QueueBuilder.durable(prefix + name)
                    .quorum()
                    .deliveryLimit(deliveryLimit)
                    .deadLetterExchange(dlx.getName())
                    .deadLetterRoutingKey(name)
                    .build();
            Queue dlq = QueueBuilder.nonDurable(prefix + name + ".dlq").build();
            declarables.add(queue);
            declarables.add(dlq);
            declarables.add(BindingBuilder.bind(dlq).to(dlx).with(name));
        }
        return new Declarables(declarables);
    }

    /** A connection factory whose connections RabbitMQ lists under {@code name}. */
    public static CachingConnectionFactory connectionFactory(String name) {
        requireBroker();
        CachingConnectionFactory factory = new CachingConnectionFactory(HOST, PORT);
        factory.setUsername("guest");
        factory.setPassword("guest");
        factory.setConnectionNameStrategy(f -> name);
        factory.setChannelCacheSize(25);
        return factory;
    }

    /** A RabbitMQ client connection factory for the shared broker. */
    public static com.rabbitmq.client.ConnectionFactory clientConnectionFactory() {
        requireBroker();
        com.rabbitmq.client.ConnectionFactory factory = new com.rabbitmq.client.ConnectionFactory();
        factory.setHost(HOST);
        factory.setPort(PORT);
        factory.setUsername("guest");
        factory.setPassword("guest");
        return factory;
    }

    /**
     * Closes, on the broker's side, every connection named {@code name}, with {@code rabbitmqctl}
     * (the broker then sends connection.close, as when it restarts or an operator kills it).
     *
     * @return whether rabbitmqctl closed at least one; {@code false} when it is not usable here
     */
    public static boolean closeOnBroker(String name) {
        try {
            List<String> names = new ArrayList<>();
            Process list = new ProcessBuilder("rabbitmqctl", "-s", "list_connections", "pid", "client_properties")
                    .redirectErrorStream(true)
                    .start();
            String output = new String(list.getInputStream().readAllBytes(), Charset.defaultCharset());
            if (!list.waitFor(30, TimeUnit.SECONDS) || list.exitValue() != 0) {
                return false;
            }
            if (!output.contains(name)) {
                org.slf4j.LoggerFactory.getLogger(TestRabbit.class)
                        .info("rabbitmqctl lists no connection named {}: {}", name, output);
            }
            for (String line : output.split("\n", -1)) {
                // client_properties holds the connection_name the client gave, quoted.
                String[] columns = line.split("\t", 2);
                if (columns.length == 2 && columns[1].contains("\"" + name + "\"")) {
                    names.add(columns[0].trim());
                }
            }
            for (String connection : names) {
                Process close = new ProcessBuilder(
                                "rabbitmqctl", "-q", "close_connection", connection, "sumi test: connection loss")
                        .redirectErrorStream(true)
                        .start();
                String closeOutput = new String(close.getInputStream().readAllBytes(), Charset.defaultCharset());
                if (!close.waitFor(30, TimeUnit.SECONDS) || close.exitValue() != 0) {
                    org.slf4j.LoggerFactory.getLogger(TestRabbit.class)
                            .info("rabbitmqctl could not close {}: {}", connection, closeOutput);
                    return false;
                }
            }
            if (names.isEmpty()) {
                org.slf4j.LoggerFactory.getLogger(TestRabbit.class)
                        .info("rabbitmqctl output without a match for {}: {}", name, output);
            }
            return !names.isEmpty();
        } catch (IOException ex) {
            return false;
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            return false;
        }
    }
}
