package io.sumi.examples.mail.demo;

import io.sumi.examples.mail.MailListener;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.springframework.amqp.core.AmqpAdmin;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.MessageProperties;
import org.springframework.amqp.rabbit.core.RabbitTemplate;
import org.springframework.amqp.rabbit.listener.RabbitListenerEndpointRegistry;
import org.springframework.context.Lifecycle;

/**
 * The demo's RabbitMQ side in the {@code rabbitmq} mode: copies and keyless messages are published
 * to RabbitMQ, and "every message handled" means the mail queue and its dead-letter queue are empty.
 */
public class RabbitMailMode implements BrokerCopies.CopySender {

    private final RabbitTemplate template;
    private final AmqpAdmin admin;
    private final RabbitListenerEndpointRegistry listeners;
    private final String topic;

    public RabbitMailMode(
            RabbitTemplate template, AmqpAdmin admin, RabbitListenerEndpointRegistry listeners, String topic) {
        this.template = template;
        this.admin = admin;
        this.listeners = listeners;
        this.topic = topic;
    }

    /** A copy of a dispatched mail request: same payload and headers (so the same outbox-id), to the same exchange. */
    @Override
    public CompletableFuture<?> send(ProducerRecord<String, String> copy) {
        MessageProperties properties = new MessageProperties();
        properties.setContentType(MessageProperties.CONTENT_TYPE_TEXT_PLAIN);
        for (Header header : copy.headers()) {
            properties.setHeader(header.key(), new String(header.value(), StandardCharsets.UTF_8));
        }
        template.send(topic, copy.key(), new Message(copy.value().getBytes(StandardCharsets.UTF_8), properties));
        return CompletableFuture.completedFuture(null);
    }

    /** A producer that bypasses the outbox and sets no key: the consumer must dead-letter it. */
    void sendWithoutKey(String payload) {
        MessageProperties properties = new MessageProperties();
        properties.setContentType(MessageProperties.CONTENT_TYPE_TEXT_PLAIN);
        template.send("", topic, new Message(payload.getBytes(StandardCharsets.UTF_8), properties));
    }

    void awaitConsumers(Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        // Lifecycle: the container's interface moved packages in Spring AMQP 4.1 (Boot 4.1).
        Lifecycle container = listeners.getListenerContainer(MailListener.ID);
        while (System.nanoTime() < deadline) {
            Properties queue = admin.getQueueProperties(topic);
            if (container != null
                    && container.isRunning()
                    && queue != null
                    && ((Number) queue.get(RabbitAdminKeys.CONSUMERS)).intValue() >= 3) {
                return;
            }
            Thread.sleep(100);
        }
        throw new IllegalStateException("The consumers of queue " + topic + " did not start within " + timeout);
    }

    /** Nothing left in the mail queue (ready or unacknowledged is not told apart: the counters are checked too). */
    boolean drained() {
        Properties queue = admin.getQueueProperties(topic);
        return queue != null && ((Number) queue.get(RabbitAdminKeys.MESSAGES)).intValue() == 0;
    }

    /** The keys of RabbitAdmin's queue properties. */
    private static final class RabbitAdminKeys {
        static final Object CONSUMERS = org.springframework.amqp.rabbit.core.RabbitAdmin.QUEUE_CONSUMER_COUNT;
        static final Object MESSAGES = org.springframework.amqp.rabbit.core.RabbitAdmin.QUEUE_MESSAGE_COUNT;
    }
}
