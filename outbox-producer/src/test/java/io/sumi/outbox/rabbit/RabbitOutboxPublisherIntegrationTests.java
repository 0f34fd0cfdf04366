package io.sumi.outbox.rabbit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import io.sumi.outbox.OutboxRecord;
import io.sumi.outbox.PublishResult;
import io.sumi.testing.TestRabbit;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.amqp.core.BindingBuilder;
import org.springframework.amqp.core.DirectExchange;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.Queue;
import org.springframework.amqp.core.TopicExchange;
import org.springframework.amqp.rabbit.connection.CachingConnectionFactory;
import org.springframework.amqp.rabbit.core.RabbitAdmin;
import org.springframework.amqp.rabbit.core.RabbitTemplate;

/**
 * The RabbitMQ publisher against the real broker (127.0.0.1:5672): what a message carries, order
 * within a batch, unroutable and unknown destinations as failures, and a connection factory without
 * confirms refused. Exchanges and queues are named after the run and deleted afterwards.
 */
class RabbitOutboxPublisherIntegrationTests {

    static final String PREFIX =
            "sumi-outbox-it-" + UUID.randomUUID().toString().substring(0, 8) + "-";
    static final String ORDERS = PREFIX + "orders";
    static final String LONELY = PREFIX + "lonely";

    static CachingConnectionFactory connections;
    static RabbitAdmin admin;
    static RabbitTemplate reader;
    static RabbitOutboxPublisher publisher;

    @BeforeAll
    static void start() {
        connections = TestRabbit.connectionFactory(PREFIX + "reader");
        admin = new RabbitAdmin(connections);
        reader = new RabbitTemplate(connections);
        TopicExchange orders = new TopicExchange(ORDERS, false, false);
        Queue queue = new Queue(ORDERS, false);
        admin.declareExchange(orders);
        admin.declareQueue(queue);
        admin.declareBinding(BindingBuilder.bind(queue).to(orders).with("#"));
        // An exchange without any queue bound: everything sent to it is unroutable.
        admin.declareExchange(new DirectExchange(LONELY, false, false));
        publisher = RabbitOutboxPublisher.create(
                TestRabbit.clientConnectionFactory(),
                RabbitOutboxPublisher.routes(Map.of(
                        "orders",
                        RabbitDestination.forTopic(ORDERS),
                        "lonely",
                        RabbitDestination.forTopic(LONELY),
                        "nowhere",
                        RabbitDestination.forTopic(PREFIX + "missing"))),
                Duration.ofSeconds(10),
                RabbitOutboxPublisher.DEFAULT_CONTENT_TYPE);
    }

    @AfterAll
    static void stop() {
        if (publisher != null) {
            publisher.close();
        }
        if (admin != null) {
            admin.deleteQueue(ORDERS);
            admin.deleteExchange(ORDERS);
            admin.deleteExchange(LONELY);
            connections.destroy();
        }
    }

    static OutboxRecord record(long id, String topic, String aggregateId, String payload) {
        Map<String, String> headers = new LinkedHashMap<>();
        headers.put("trace-id", "t-" + id);
        headers.put("tenant-id", "acme");
        headers.put("schema-version", "2");
        return new OutboxRecord(
                id,
                aggregateId,
                topic,
                payload,
                headers,
                Instant.parse("2030-01-01T00:00:00Z"),
                Instant.EPOCH,
                null,
                0,
                null,
                null,
                null);
    }

    static List<Message> drain(String queue) {
        List<Message> messages = new ArrayList<>();
        for (Message message; (message = reader.receive(queue, 500)) != null; ) {
            messages.add(message);
        }
        return messages;
    }

    @Test
    void confirmedMessagesCarryTheOutboxIdTheAppendedHeadersAndThePayloadInIdOrder() {
        List<OutboxRecord> batch = new ArrayList<>();
        for (long id = 1; id <= 50; id++) {
            batch.add(record(id, "orders", "order-" + (id % 3), "{\"n\":" + id + "}"));
        }

        PublishResult result = publisher.publish(batch);

        assertThat(result.failures()).isEmpty();
        List<Message> received = drain(ORDERS);
        assertThat(received).hasSize(50);
        assertThat(received)
                .extracting(m -> m.getMessageProperties().getHeaders().get("outbox-id"))
                .containsExactlyElementsOf(
                        batch.stream().map(OutboxRecord::outboxId).toList());
        Message first = received.get(0);
        assertThat(new String(first.getBody(), StandardCharsets.UTF_8)).isEqualTo("{\"n\":1}");
        assertThat(first.getMessageProperties().getHeaders())
                .containsEntry("trace-id", "t-1")
                .containsEntry("tenant-id", "acme")
                .containsEntry("schema-version", "2");
        assertThat(first.getMessageProperties().getMessageId()).isEqualTo("1");
        assertThat(first.getMessageProperties().getReceivedRoutingKey()).isEqualTo("order-1");
        assertThat(first.getMessageProperties().getContentType()).isEqualTo("text/plain");
        assertThat(first.getMessageProperties().getReceivedDeliveryMode())
                .isEqualTo(org.springframework.amqp.core.MessageDeliveryMode.PERSISTENT);
    }

    @Test
    void anUnroutableMessageFailsItsRowInsteadOfVanishingAndTheOthersOfTheBatchAreSent() {
        PublishResult result = publisher.publish(List.of(
                record(101, "orders", "a", "routed"),
                record(102, "lonely", "a", "unroutable"),
                record(103, "orders", "b", "routed too")));

        assertThat(result.failures()).containsOnlyKeys(102L);
        assertThat(result.failures().get(102L))
                .isInstanceOf(UnroutableMessageException.class)
                .hasMessageContaining(LONELY)
                .hasMessageContaining("NO_ROUTE");
        assertThat(drain(ORDERS))
                .extracting(m -> new String(m.getBody(), StandardCharsets.UTF_8))
                .containsExactly("routed", "routed too");
    }

    @Test
    void anUnknownExchangeFailsTheRowsAndTheNextBatchIsSentOnANewChannel() {
        PublishResult failed = publisher.publish(List.of(record(201, "nowhere", "a", "lost?")));

        assertThat(failed.failures()).containsOnlyKeys(201L);
        assertThat(failed.failures().get(201L).getMessage()).containsAnyOf("NOT_FOUND", "nack", "closed");

        assertThat(publisher
                        .publish(List.of(record(202, "orders", "a", "after")))
                        .failures())
                .isEmpty();
        assertThat(drain(ORDERS))
                .extracting(m -> new String(m.getBody(), StandardCharsets.UTF_8))
                .containsExactly("after");
    }

    @Test
    void aConnectionFactoryWithoutConfirmsOrReturnsIsRefused() {
        CachingConnectionFactory plain = TestRabbit.connectionFactory(PREFIX + "plain");
        try {
            assertThatIllegalArgumentException()
                    .isThrownBy(() -> RabbitOutboxPublisher.create(
                            plain, RabbitOutboxPublisher.routes(Map.of()), Duration.ofSeconds(5)))
                    .withMessageContaining("publisher confirms");
        } finally {
            plain.destroy();
        }
    }

    @Test
    void aTopicWithoutConfigurationGoesToTheExchangeNamedLikeIt() {
        Map<String, RabbitDestination> none = Map.of();
        RabbitDestination destination = RabbitOutboxPublisher.routes(none).apply("mail.send");
        assertThat(destination).isEqualTo(new RabbitDestination("mail.send", null));
        assertThat(destination.routingKey("order-7")).isEqualTo("order-7");
        @Nullable String fixed = new RabbitDestination("", "mail-queue").routingKey("order-7");
        assertThat(fixed).isEqualTo("mail-queue");
    }
}
