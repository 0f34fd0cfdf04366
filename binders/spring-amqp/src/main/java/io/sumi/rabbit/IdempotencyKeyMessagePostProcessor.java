package io.sumi.rabbit;

import io.sumi.consumer.HandlerDefinition;
import io.sumi.consumer.IdempotencyContext;
import java.util.Objects;
import org.springframework.amqp.AmqpException;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.MessagePostProcessor;
import org.springframework.amqp.core.MessageProperties;

/**
 * Carries the key of the message being handled on to the messages the handler sends with a
 * {@code RabbitTemplate}, as the {@code idempotency-key} header (which Sumi's consumers read when
 * there is no {@code outbox-id}), so chained consumers deduplicate too. Register it with
 * {@code RabbitTemplate.addBeforePublishPostProcessors} (the starter does, on every
 * {@code RabbitTemplate} bean; {@code sumi.rabbit.passthrough.enabled=false} turns it off).
 *
 * <p>The template runs before-publish post processors on the thread that calls {@code send}, so
 * inside an idempotent handler the current {@link IdempotencyContext} is there; outside one
 * nothing is added. A message that already has the header keeps its own. <strong>A handler that
 * sends several distinct messages to one consumer must give each its own key header</strong>
 * (e.g. {@code key + ":" + itemId}): with the inherited key, the downstream consumer would take the
 * second for a duplicate of the first.
 */
public final class IdempotencyKeyMessagePostProcessor implements MessagePostProcessor {

    private final String headerName;

    public IdempotencyKeyMessagePostProcessor() {
        this(HandlerDefinition.IDEMPOTENCY_KEY_HEADER);
    }

    public IdempotencyKeyMessagePostProcessor(String headerName) {
        this.headerName = Objects.requireNonNull(headerName, "headerName");
    }

    @Override
    public Message postProcessMessage(Message message) throws AmqpException {
        IdempotencyContext.find().ifPresent(context -> {
            MessageProperties properties = message.getMessageProperties();
            if (properties.getHeader(headerName) == null) {
                properties.setHeader(headerName, context.key());
            }
        });
        return message;
    }
}
