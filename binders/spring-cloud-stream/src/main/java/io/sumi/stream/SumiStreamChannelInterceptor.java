package io.sumi.stream;

import io.sumi.consumer.IdempotencyContext;
import io.sumi.stream.internal.InboundMessages;
import org.jspecify.annotations.Nullable;
import org.springframework.cloud.stream.messaging.DirectWithAttributesChannel;
import org.springframework.integration.channel.interceptor.GlobalChannelInterceptorWrapper;
import org.springframework.messaging.Message;
import org.springframework.messaging.MessageChannel;
import org.springframework.messaging.support.ChannelInterceptor;
import org.springframework.messaging.support.ErrorMessage;
import org.springframework.messaging.support.MessageBuilder;

/**
 * The channel side of Sumi's Spring Cloud Stream support, registered as a global channel
 * interceptor (see {@link #asGlobalInterceptor()}), which Spring Cloud Stream applies to its
 * binding channels and to the channels {@code StreamBridge} creates:
 * <ul>
 *   <li>on an input binding channel it records the message as the binder delivered it, for the
 *   duration of the send, in which the bound function runs: an {@code @IdempotentHandler}
 *   function that takes only a payload still finds its message's key headers;</li>
 *   <li>on any other channel it adds the running idempotent function's key to the messages sent
 *   while the function runs (a {@code StreamBridge} send in the function) or while its output is
 *   sent (a {@code Function}'s return value), in the {@linkplain StreamSettings#keyHeader() key
 *   header}, unless the message has that header already. Downstream consumers, and providers the
 *   messages end up calling, so see one key per original message.</li>
 * </ul>
 * Messages are otherwise passed on unchanged. Thread-safe; the state is per thread.
 */
public final class SumiStreamChannelInterceptor implements ChannelInterceptor {

    private static final String CHANNEL_TYPE_ATTRIBUTE = "type";

    private final @Nullable String keyHeader;

    /**
     * @param keyHeader the header outgoing messages get the key in, or {@code null} to add none
     *     (the input side works regardless)
     */
    public SumiStreamChannelInterceptor(@Nullable String keyHeader) {
        this.keyHeader = keyHeader;
    }

    /** This interceptor as a global channel interceptor for every channel ({@code "*"}), to declare as a bean. */
    public GlobalChannelInterceptorWrapper asGlobalInterceptor() {
        GlobalChannelInterceptorWrapper wrapper = new GlobalChannelInterceptorWrapper(this);
        wrapper.setPatterns(new String[] {"*"});
        return wrapper;
    }

    @Override
    public @Nullable Message<?> preSend(Message<?> message, MessageChannel channel) {
        if (isInputBinding(channel)) {
            InboundMessages.push(message);
            return message;
        }
        if (keyHeader == null
                || message instanceof ErrorMessage
                || message.getHeaders().containsKey(keyHeader)) {
            return message;
        }
        String key = currentKey();
        if (key == null) {
            return message;
        }
        return MessageBuilder.fromMessage(message).setHeader(keyHeader, key).build();
    }

    @Override
    public void afterSendCompletion(Message<?> message, MessageChannel channel, boolean sent, @Nullable Exception ex) {
        if (isInputBinding(channel)) {
            InboundMessages.pop();
        }
    }

    private static @Nullable String currentKey() {
        IdempotencyContext context = IdempotencyContext.find().orElse(null);
        if (context != null) {
            return context.key();
        }
        InboundMessages.Frame frame = InboundMessages.current();
        return frame == null ? null : frame.outputKey();
    }

    private static boolean isInputBinding(MessageChannel channel) {
        return channel instanceof DirectWithAttributesChannel binding
                && "input".equals(binding.getAttribute(CHANNEL_TYPE_ATTRIBUTE));
    }
}
