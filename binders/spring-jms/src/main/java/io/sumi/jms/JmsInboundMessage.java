package io.sumi.jms;

import io.sumi.consumer.InboundMessage;
import jakarta.jms.BytesMessage;
import jakarta.jms.JMSException;
import jakarta.jms.MapMessage;
import jakarta.jms.Message;
import jakarta.jms.ObjectMessage;
import jakarta.jms.TextMessage;
import java.util.Collections;
import java.util.Enumeration;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.springframework.jms.support.JmsUtils;

/**
 * A JMS {@link Message} as an {@link InboundMessage}: the payload is the body as the broker
 * delivered it (a {@code TextMessage}'s text, a {@code BytesMessage}'s bytes, a
 * {@code MapMessage}'s map, an {@code ObjectMessage}'s object), so the fingerprint hashes the text
 * or bytes whatever the listener's conversion (map and object bodies are not fingerprinted).
 * Headers are the message's properties; a header name is looked up as
 * {@link JmsPropertyNames} says ({@code outbox-id}, then {@code outbox_id}, then Camel's
 * {@code outbox_HYPHEN_id}). The {@code JMSMessageID} is not a key on its own: set
 * {@code key = "#message.JMSMessageID"} to use it.
 */
public final class JmsInboundMessage implements InboundMessage {

    private final Message message;
    private @Nullable Map<String, @Nullable Object> headers;
    private @Nullable Object payload;
    private boolean payloadRead;

    public JmsInboundMessage(Message message) {
        this.message = message;
    }

    @Override
    public Message source() {
        return message;
    }

    @Override
    public @Nullable Object payload() {
        if (!payloadRead) {
            payload = body(message);
            payloadRead = true;
        }
        return payload;
    }

    @Override
    public @Nullable Object header(String name) {
        return JmsPropertyNames.lookup(name, this::property);
    }

    @Override
    public Map<String, @Nullable Object> headers() {
        if (headers == null) {
            Map<String, @Nullable Object> map = new LinkedHashMap<>();
            try {
                Enumeration<?> names = message.getPropertyNames();
                while (names.hasMoreElements()) {
                    String name = String.valueOf(names.nextElement());
                    map.put(name, InboundMessage.headerValue(message.getObjectProperty(name)));
                }
            } catch (JMSException ex) {
                throw JmsUtils.convertJmsAccessException(ex);
            }
            headers = Collections.unmodifiableMap(map);
        }
        return headers;
    }

    private @Nullable Object property(String name) {
        try {
            return message.getObjectProperty(name);
        } catch (JMSException ex) {
            throw JmsUtils.convertJmsAccessException(ex);
        }
    }

    /**
     * The body of {@code message} as delivered; a {@code BytesMessage} is reset afterwards, so the
     * listener's converter reads it from the start.
     */
    static @Nullable Object body(Message message) {
        try {
            if (message instanceof TextMessage text) {
                return text.getText();
            }
            if (message instanceof BytesMessage bytes) {
                byte[] body = new byte[(int) bytes.getBodyLength()];
                bytes.reset();
                bytes.readBytes(body);
                bytes.reset();
                return body;
            }
            if (message instanceof MapMessage map) {
                return map.getBody(Map.class);
            }
            if (message instanceof ObjectMessage object) {
                return object.getObject();
            }
            return null;
        } catch (JMSException ex) {
            throw JmsUtils.convertJmsAccessException(ex);
        }
    }

    @Override
    public String toString() {
        try {
            return message.getJMSDestination() + "#" + message.getJMSMessageID();
        } catch (JMSException ex) {
            return "JmsInboundMessage[" + message.getClass().getSimpleName() + "]";
        }
    }
}
