package io.sumi.consumer.messaging;

import io.sumi.consumer.InboundMessage;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.springframework.messaging.Message;

/**
 * A Spring {@link Message} as an {@link InboundMessage} (needs spring-messaging, which binders bring).
 */
public final class SpringMessageInboundMessage implements InboundMessage {

    private final Message<?> message;

    public SpringMessageInboundMessage(Message<?> message) {
        this.message = message;
    }

    @Override
    public Message<?> source() {
        return message;
    }

    @Override
    public Object payload() {
        return message.getPayload();
    }

    @Override
    public @Nullable Object header(String name) {
        return message.getHeaders().get(name);
    }

    @Override
    public Map<String, @Nullable Object> headers() {
        return message.getHeaders();
    }
}
