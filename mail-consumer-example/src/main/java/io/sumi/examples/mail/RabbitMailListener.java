package io.sumi.examples.mail;

import io.sumi.consumer.IdempotencyContext;
import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentHandler;
import org.springframework.amqp.rabbit.annotation.RabbitListener;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.stereotype.Component;

/**
 * The mail consumer of the {@code rabbitmq} mode ({@code --spring.profiles.active=rabbitmq}): the
 * same handler as {@link MailListener}, on a {@code @RabbitListener} with three consumers on the
 * queue the outbox's RabbitMQ publisher feeds. Same consumer name ({@value MailListener#ID}), so
 * the same ledger rows and meters. A failed send is retried by the container's retry interceptor
 * ({@code spring.rabbitmq.listener.simple.retry.*}), then rejected to the dead-letter exchange; a
 * message without a key goes there at once (Sumi's container advice, docs/rabbitmq.md); a busy key
 * is requeued after {@code sumi.rabbit.busy-retry-interval}.
 */
@Component
@ConditionalOnProperty(name = "mail-consumer.broker", havingValue = "rabbitmq")
public class RabbitMailListener {

    private final MailGateway mail;

    public RabbitMailListener(MailGateway mail) {
        this.mail = mail;
    }

    @RabbitListener(id = MailListener.ID, queues = "${mail-consumer.topic:mail.send}", concurrency = "3")
    @IdempotentHandler(consumer = MailListener.ID, mode = IdempotencyMode.LEASE)
    public void onMailRequest(String payload) {
        IdempotencyContext context = IdempotencyContext.current();
        mail.send(MailRequest.parse(payload), context.key());
    }
}
