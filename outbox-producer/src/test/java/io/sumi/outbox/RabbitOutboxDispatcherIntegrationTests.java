package io.sumi.outbox;

import static org.assertj.core.api.Assertions.assertThat;

import io.sumi.outbox.rabbit.RabbitDestination;
import io.sumi.outbox.rabbit.RabbitOutboxPublisher;
import io.sumi.testing.TestDatabase;
import io.sumi.testing.TestRabbit;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.springframework.amqp.core.BindingBuilder;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.Queue;
import org.springframework.amqp.core.TopicExchange;
import org.springframework.amqp.rabbit.connection.CachingConnectionFactory;
import org.springframework.amqp.rabbit.core.RabbitAdmin;
import org.springframework.amqp.rabbit.core.RabbitTemplate;

/**
 * The dispatcher's contract (every test of {@code OutboxDispatcherContractTests}, on H2) with the
 * tests' publisher sending through the RabbitMQ publisher to the real broker: a row the dispatcher
 * marks dispatched is one RabbitMQ confirmed. After each test the queue must hold exactly the rows
 * recorded as sent, each once, in id order per aggregate.
 */
class RabbitOutboxDispatcherIntegrationTests extends OutboxDispatcherContractTests {

    static final String NAME =
            "sumi-outbox-contract-" + UUID.randomUUID().toString().substring(0, 8);

    static CachingConnectionFactory connections;
    static RabbitAdmin admin;
    static RabbitTemplate reader;
    static RabbitOutboxPublisher rabbit;

    @BeforeAll
    static void start() {
        connections = TestRabbit.connectionFactory(NAME + "-reader");
        admin = new RabbitAdmin(connections);
        reader = new RabbitTemplate(connections);
        TopicExchange exchange = new TopicExchange(NAME, false, false);
        Queue queue = new Queue(NAME, false);
        admin.declareExchange(exchange);
        admin.declareQueue(queue);
        admin.declareBinding(BindingBuilder.bind(queue).to(exchange).with("#"));
        rabbit = RabbitOutboxPublisher.create(
                TestRabbit.clientConnectionFactory(),
                topic -> new RabbitDestination(NAME, null),
                Duration.ofSeconds(10),
                RabbitOutboxPublisher.DEFAULT_CONTENT_TYPE);
    }

    @AfterAll
    static void stop() {
        if (rabbit != null) {
            rabbit.close();
        }
        if (admin != null) {
            admin.deleteQueue(NAME);
            admin.deleteExchange(NAME);
            connections.destroy();
        }
    }

    @Override
    TestDatabase database() {
        return TestDatabase.H2;
    }

    @Override
    RecordingPublisher newPublisher() {
        return new RecordingPublisher().through(rabbit);
    }

    @AfterEach
    void theQueueHoldsExactlyTheRowsRecordedAsSent() {
        List<String> received = new ArrayList<>();
        for (Message message; (message = reader.receive(NAME, 200)) != null; ) {
            received.add((String) message.getMessageProperties().getHeaders().get("outbox-id"));
        }
        assertThat(received)
                .containsExactlyElementsOf(
                        publisher.sentIds().stream().map(String::valueOf).toList());
    }
}
