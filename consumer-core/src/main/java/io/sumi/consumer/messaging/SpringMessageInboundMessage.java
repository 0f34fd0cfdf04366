package io.sumi.consumer.messaging;

import io.sumi.consumer.Fingerprints;
import io.sumi.consumer.InboundMessage;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.springframework.messaging.Message;

/**
 * A Spring {@link Message} as an {@link InboundMessage} (needs spring-messaging, which binders bring).
 *
 * <p>When the message's payload has already been converted, binders pass the payload as the
 * broker delivered it too, so the fingerprint hashes the raw bytes and does not depend on
 * conversion.
 */
public final class SpringMessageInboundMessage implements InboundMessage {

    private final Message<?> message;
    private final @Nullable Object rawPayload;

    public SpringMessageInboundMessage(Message<?> message) {
        this(message, null);
    }

    /**
     * @param message the message as the handler sees it (the SpEL variable {@code #message})
     * @param rawPayload the payload as the broker delivered it, or {@code null} to fingerprint the message's payload
     */
    public SpringMessageInboundMessage(Message<?> message, @Nullable Object rawPayload) {
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
        return "SpringMessageInboundMessage[headers=" + message.getHeaders().keySet() + "]";
    }
}
