package io.sumi.kafka;

import io.sumi.consumer.messaging.MessageReplyCodec;
import java.lang.reflect.Method;
import java.lang.reflect.Type;
import java.util.List;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.jspecify.annotations.Nullable;
import org.springframework.core.ResolvableType;
import org.springframework.kafka.support.KafkaHeaders;
import org.springframework.messaging.Message;
import org.springframework.messaging.converter.MessageConverter;
import org.springframework.util.ClassUtils;

/**
 * Replies of {@code @KafkaListener} methods that keep them ({@code @IdempotentHandler(storeReply =
 * true)}, docs/replies.md): the codec that keeps them and the start-up check of such methods.
 *
 * <p>The hook: Spring Kafka's {@code MessagingMessageListenerAdapter} invokes the listener method
 * (through Sumi's advice) and sends what it returns to the reply topic ({@code @SendTo}, or the
 * request's {@code kafka_replyTopic}), adding the request's correlation id. Sumi keeps the return
 * value and, on a duplicate, returns the kept reply from the method instead of skipping it, so the
 * adapter sends it exactly as it sends a fresh one, with the new request's correlation id and
 * reply topic. Headers named {@code kafka_*} of a {@code Message} reply are therefore not kept.
 *
 * @since 0.1.0
 */
public final class KafkaReplies {

    private KafkaReplies() {}

    /**
     * The codec with {@code converter} for replies that are neither {@code String} nor
     * {@code byte[]} (Spring's Jackson converter in the starter).
     */
    public static MessageReplyCodec codec(@Nullable MessageConverter converter) {
        return new MessageReplyCodec(converter, List.of(KafkaHeaders.PREFIX));
    }

    /** The codec with Spring's Jackson converter when Jackson 3 is on the classpath, else none. */
    public static MessageReplyCodec codec() {
        return MessageReplyCodec.withDefaultConverter(KafkaHeaders.PREFIX);
    }

    /**
     * Checks at start-up that a listener method that keeps its replies can have one.
     *
     * @throws IllegalStateException if it returns nothing, or is a batch listener (a
     *     {@code List<ConsumerRecord>}, {@code List<Message>} or {@code ConsumerRecords} parameter)
     */
    public static void checkReplying(Method method) {
        MessageReplyCodec.requireReply(method);
        String name = ClassUtils.getQualifiedMethodName(method);
        for (Type type : method.getGenericParameterTypes()) {
            ResolvableType parameter = ResolvableType.forType(type);
            Class<?> raw = parameter.toClass();
            boolean batch = ConsumerRecords.class.isAssignableFrom(raw)
                    || (List.class.isAssignableFrom(raw)
                            && (ConsumerRecord.class.isAssignableFrom(
                                            parameter.getGeneric(0).toClass())
                                    || Message.class.isAssignableFrom(
                                            parameter.getGeneric(0).toClass())));
            if (batch) {
                throw new IllegalStateException("@IdempotentHandler(storeReply = true) on " + name
                        + " is a batch listener; replies are kept for record listeners only (a batch has no reply per"
                        + " message)");
            }
        }
    }
}
