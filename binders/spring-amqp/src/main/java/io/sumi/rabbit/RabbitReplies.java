package io.sumi.rabbit;

import io.sumi.consumer.messaging.MessageReplyCodec;
import java.lang.reflect.Method;
import java.util.List;
import org.jspecify.annotations.Nullable;
import org.springframework.amqp.support.AmqpHeaders;
import org.springframework.messaging.converter.MessageConverter;
import org.springframework.util.ClassUtils;

/**
 * Replies of {@code @RabbitListener} methods that keep them ({@code @IdempotentHandler(storeReply =
 * true)}, docs/replies.md): the codec that keeps them and the start-up check of such methods.
 *
 * <p>The hook: Spring AMQP's {@code MessagingMessageListenerAdapter} invokes the listener method
 * (through Sumi's advice), converts what it returns with the container's message converter and
 * sends it to the request's {@code replyTo} (or {@code @SendTo}), with the request's correlation
 * id. Sumi keeps the return value and, on a duplicate, returns the kept reply from the method, so
 * the adapter converts and addresses it exactly as a fresh one, for the new request. Headers named
 * {@code amqp_*} of a {@code Message} reply are therefore not kept.
 *
 * @since 0.1.0
 */
public final class RabbitReplies {

    private RabbitReplies() {}

    /** The codec with {@code converter} for replies that are neither {@code String} nor {@code byte[]}. */
    public static MessageReplyCodec codec(@Nullable MessageConverter converter) {
        return new MessageReplyCodec(converter, List.of(AmqpHeaders.PREFIX));
    }

    /** The codec with Spring's Jackson converter when Jackson 3 is on the classpath, else none. */
    public static MessageReplyCodec codec() {
        return MessageReplyCodec.withDefaultConverter(AmqpHeaders.PREFIX);
    }

    /**
     * Checks at start-up that a listener method that keeps its replies can have one.
     *
     * @throws IllegalStateException if it returns nothing, or takes a {@code List} (a consumer batch)
     */
    public static void checkReplying(Method method) {
        MessageReplyCodec.requireReply(method);
        for (Class<?> type : method.getParameterTypes()) {
            if (List.class.isAssignableFrom(type)) {
                throw new IllegalStateException("@IdempotentHandler(storeReply = true) on "
                        + ClassUtils.getQualifiedMethodName(method)
                        + " takes a List (a consumer batch); replies are kept for record listeners only");
            }
        }
    }
}
