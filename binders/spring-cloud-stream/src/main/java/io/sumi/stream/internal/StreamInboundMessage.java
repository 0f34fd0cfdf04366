package io.sumi.stream.internal;

import io.sumi.consumer.Fingerprints;
import io.sumi.consumer.InboundMessage;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.springframework.messaging.Message;

/**
 * A message of a Spring Cloud Stream binding as the consumer core sees it: the headers the binder
 * delivered, the payload as the function receives it (converted, for the key expression's
 * {@code #payload}) and a fingerprint of the payload as the broker delivered it (raw bytes, so it
 * does not depend on conversion).
 */
final class StreamInboundMessage implements InboundMessage {

    private final Message<?> message;
    private final @Nullable Object rawPayload;

    /**
     * @param message the converted payload with the delivered headers (the SpEL variable {@code #message})
     * @param rawPayload the payload as the broker delivered it
     */
    StreamInboundMessage(Message<?> message, @Nullable Object rawPayload) {
        this.message = message;
        this.rawPayload = rawPayload;
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

    @Override
    public @Nullable String fingerprint() {
        String raw = Fingerprints.of(rawPayload);
        return raw != null ? raw : Fingerprints.of(message.getPayload());
    }

    @Override
    public String toString() {
        return "StreamInboundMessage[headers=" + message.getHeaders().keySet() + "]";
    }
}
