package io.sumi.jms;

import io.sumi.consumer.HandlerDefinition;
import io.sumi.consumer.IdempotencyContext;
import jakarta.jms.JMSException;
import jakarta.jms.Message;
import jakarta.jms.Session;
import java.util.Objects;
import java.util.Optional;
import org.springframework.jms.core.MessagePostProcessor;
import org.springframework.jms.support.converter.MessageConversionException;
import org.springframework.jms.support.converter.MessageConverter;

/**
 * Carries the key of the message being handled on to the JMS messages the handler sends, as the
 * {@code idempotency_key} property (the JMS-valid spelling of {@code idempotency-key}, which Sumi's
 * JMS consumers read when there is no outbox id, see {@link JmsPropertyNames}), so chained
 * consumers deduplicate too. Inside an idempotent handler the current {@link IdempotencyContext}
 * is there; outside one nothing is added. A message that already has the property keeps its own.
 *
 * <p>Use it per send ({@code jmsTemplate.convertAndSend(destination, payload, postProcessor)}), or
 * around a template's converter with {@link #converter}: the starter does that on every
 * {@code JmsTemplate} bean, which covers {@code convertAndSend}; a {@code send(MessageCreator)}
 * sets the property itself. <strong>A handler that sends several distinct messages to one consumer
 * must give each its own key</strong> (e.g. {@code key + ":" + itemId}): with the inherited key,
 * the downstream consumer would take the second for a duplicate of the first.
 */
public final class IdempotencyKeyJmsPostProcessor implements MessagePostProcessor {

    private final String propertyName;

    /** Writes {@code idempotency_key}. */
    public IdempotencyKeyJmsPostProcessor() {
        this(HandlerDefinition.IDEMPOTENCY_KEY_HEADER);
    }

    /** Writes the JMS-valid spelling of {@code headerName} ({@code -} replaced by {@code _}). */
    public IdempotencyKeyJmsPostProcessor(String headerName) {
        this.propertyName = JmsPropertyNames.jmsName(Objects.requireNonNull(headerName, "headerName"));
    }

    /** The property it writes. */
    public String propertyName() {
        return propertyName;
    }

    @Override
    public Message postProcessMessage(Message message) throws JMSException {
        Optional<IdempotencyContext> context = IdempotencyContext.find();
        if (context.isPresent() && message.getObjectProperty(propertyName) == null) {
            message.setStringProperty(propertyName, context.get().key());
        }
        return message;
    }

    /** {@code delegate}, with this post processor applied to every message it makes. */
    public MessageConverter converter(MessageConverter delegate) {
        return new PassthroughConverter(Objects.requireNonNull(delegate, "delegate"), this);
    }

    /** A converter that adds the key to what its delegate makes. */
    public record PassthroughConverter(MessageConverter delegate, IdempotencyKeyJmsPostProcessor passthrough)
            implements MessageConverter {

        @Override
        public Message toMessage(Object object, Session session) throws JMSException, MessageConversionException {
            return passthrough.postProcessMessage(delegate.toMessage(object, session));
        }

        @Override
        public Object fromMessage(Message message) throws JMSException, MessageConversionException {
            return delegate.fromMessage(message);
        }
    }
}
