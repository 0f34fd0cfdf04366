package io.sumi.rabbit;

import io.sumi.consumer.Fingerprints;
import io.sumi.consumer.InboundMessage;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.MessageProperties;

/**
 * A Spring AMQP {@link Message} as an {@link InboundMessage}: the payload is the body as the broker
 * delivered it (so the fingerprint hashes the raw bytes, whatever the listener's conversion),
 * headers are the message's AMQP headers (byte arrays that are UTF-8 shown as text, for SpEL). The
 * AMQP {@code message-id} property is not a key on its own: add {@code #message.messageProperties.messageId}
 * as the key expression to use it.
 */
public final class RabbitInboundMessage implements InboundMessage {

    private final Message message;
    private @Nullable Map<String, @Nullable Object> headers;

    public RabbitInboundMessage(Message message) {
        this.message = message;
    }

    @Override
    public Message source() {
        return message;
    }

    @Override
    public byte[] payload() {
        return message.getBody();
    }

    @Override
    public @Nullable Object header(String name) {
        return message.getMessageProperties().getHeaders().get(name);
    }

    @Override
    public Map<String, @Nullable Object> headers() {
        if (headers == null) {
            Map<String, @Nullable Object> map = new LinkedHashMap<>();
            message.getMessageProperties()
                    .getHeaders()
                    .forEach((name, value) -> map.put(name, InboundMessage.headerValue(value)));
            headers = Collections.unmodifiableMap(map);
        }
        return headers;
    }

    @Override
    public @Nullable String fingerprint() {
        return Fingerprints.of(message.getBody());
    }

    @Override
    public String toString() {
        MessageProperties properties = message.getMessageProperties();
        return properties.getConsumerQueue() + "#" + properties.getDeliveryTag();
    }
}
