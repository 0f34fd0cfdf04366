package io.sumi.consumer.messaging;

import io.sumi.consumer.HandlerReply;
import io.sumi.consumer.HandlerResult;
import io.sumi.consumer.MessageOutcome;
import io.sumi.store.StoredReply;
import java.lang.reflect.Method;
import java.lang.reflect.Type;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;
import org.springframework.core.ResolvableType;
import org.springframework.messaging.Message;
import org.springframework.messaging.MessageHeaders;
import org.springframework.messaging.converter.JacksonJsonMessageConverter;
import org.springframework.messaging.converter.MessageConverter;
import org.springframework.messaging.support.MessageBuilder;
import org.springframework.util.ClassUtils;
import org.springframework.util.MimeType;

/**
 * Turns the reply object of a listener that keeps its replies
 * ({@code @IdempotentHandler(storeReply = true)}) into a {@link StoredReply} and back, for binders
 * whose containers send a listener's return value as the reply ({@code @KafkaListener} with
 * {@code @SendTo}, {@code @RabbitListener}).
 *
 * <p>Why the return value, and not the bytes the container sends: the container serializes and
 * sends the reply after the listener method returns, when the message's row is already completed
 * (lease mode) or committed (transactional mode); the reply must be written with the completion.
 * So the codec keeps the return value, and on a duplicate gives the container an equal object,
 * which it serializes and addresses as it does any reply: to the new request's reply address, with
 * the new request's correlation id.
 *
 * <p>What is kept:
 * <ul>
 *   <li>{@code byte[]} and {@code String} bodies as they are (text as UTF-8);</li>
 *   <li>any other body through the {@link MessageConverter} given (the starter uses Spring's
 *   Jackson converter when Jackson is present), and read back as the payload type the listener
 *   method declares (a {@code Message<T>}'s {@code T}); without a converter such a reply fails the
 *   message with an {@link IllegalStateException}, never silently;</li>
 *   <li>a {@link Message} reply stays a {@code Message}, with its own headers whose values are
 *   text ({@link String}, or a {@link MimeType} such as {@code contentType}). Headers that belong to
 *   the request it answered or to the transport are dropped, so that the new request's are used:
 *   {@code id}, {@code timestamp}, {@code replyChannel}, {@code errorChannel} and every header
 *   whose name starts with one of the binder's prefixes ({@code kafka_}: correlation id, reply
 *   topic and partition, the topic to send to; {@code amqp_}: correlation id, reply-to). Headers
 *   whose values are neither text nor a MIME type are dropped too.</li>
 * </ul>
 * Thread-safe if its converter is.
 *
 * @since 0.1.0
 */
public final class MessageReplyCodec {

    /** How the body was kept: {@code bytes}, {@code text} or {@code converted}. */
    public static final String KIND_HEADER = "sumi-reply-kind";

    /** Present ({@code true}) when the listener returned a {@link Message}, which a duplicate gets back as one. */
    public static final String MESSAGE_HEADER = "sumi-reply-message";

    /** The class of a converted body, for operators reading the ledger (never used to choose a class). */
    public static final String TYPE_HEADER = "sumi-reply-type";

    private static final String BYTES = "bytes";
    private static final String TEXT = "text";
    private static final String CONVERTED = "converted";
    private static final List<String> REQUEST_HEADERS = List.of(
            MessageHeaders.ID, MessageHeaders.TIMESTAMP, MessageHeaders.REPLY_CHANNEL, MessageHeaders.ERROR_CHANNEL);

    private final @Nullable MessageConverter converter;
    private final List<String> requestHeaderPrefixes;

    /**
     * @param converter the converter of bodies that are neither bytes nor text, or {@code null} for none
     * @param requestHeaderPrefixes name prefixes of headers that belong to the request or the
     *     transport, dropped from kept {@link Message} replies ({@code kafka_}, {@code amqp_})
     */
    public MessageReplyCodec(@Nullable MessageConverter converter, List<String> requestHeaderPrefixes) {
        this.converter = converter;
        this.requestHeaderPrefixes = List.copyOf(requestHeaderPrefixes);
    }

    private static final String JACKSON = "tools.jackson.databind.json.JsonMapper";

    /**
     * The codec a binder uses by default: Spring's {@code JacksonJsonMessageConverter} for bodies
     * that are neither text nor bytes when Jackson 3 is on the classpath, else none.
     *
     * @param requestHeaderPrefixes see {@link #MessageReplyCodec(MessageConverter, List)}
     */
    public static MessageReplyCodec withDefaultConverter(String... requestHeaderPrefixes) {
        MessageConverter converter = ClassUtils.isPresent(JACKSON, MessageReplyCodec.class.getClassLoader())
                ? new JacksonJsonMessageConverter()
                : null;
        return new MessageReplyCodec(converter, List.of(requestHeaderPrefixes));
    }

    /**
     * Checks at start-up that a listener method that keeps its replies has one to keep.
     *
     * @throws IllegalStateException if it returns nothing
     */
    public static void requireReply(Method method) {
        if (method.getReturnType() == void.class || method.getReturnType() == Void.class) {
            throw new IllegalStateException("@IdempotentHandler(storeReply = true) on "
                    + ClassUtils.getQualifiedMethodName(method)
                    + " keeps the method's reply, but it returns nothing: return the reply, or drop storeReply");
        }
    }

    /**
     * What a listener method that keeps its replies returns to its container, given what
     * {@link io.sumi.consumer.IdempotentExecutor#executeReplying} gave back: the handler's own reply
     * when it ran; for a duplicate the kept reply, read back as {@code method}'s return type (the
     * container then sends it as any reply, for the new request); {@code null} when there is no
     * reply (nothing is sent, as without {@code storeReply}).
     */
    public @Nullable Object listenerResult(HandlerResult<HandlerReply> result, Method method) {
        HandlerReply reply = result.value();
        if (reply == null) {
            return null;
        }
        if (result.outcome() != MessageOutcome.DUPLICATE) {
            // The handler ran (processed, or not done): its own reply.
            return reply.value();
        }
        StoredReply stored = reply.stored();
        return stored == null ? null : decode(stored, method.getGenericReturnType());
    }

    /**
     * The reply and its kept form.
     *
     * @throws IllegalStateException if the reply's body can be neither kept as it is nor converted
     */
    public HandlerReply encode(@Nullable Object reply) {
        if (reply == null) {
            return HandlerReply.of(null, null);
        }
        Map<String, String> headers = new LinkedHashMap<>();
        Object body = reply;
        if (reply instanceof Message<?> message) {
            body = message.getPayload();
            message.getHeaders().forEach((name, value) -> {
                String text = value instanceof String string
                        ? string
                        : value instanceof MimeType mimeType ? mimeType.toString() : null;
                if (text != null && !isRequestHeader(name)) {
                    headers.put(name, text);
                }
            });
            headers.put(MESSAGE_HEADER, "true");
        }
        byte[] payload;
        if (body instanceof byte[] bytes) {
            payload = bytes;
            headers.put(KIND_HEADER, BYTES);
        } else if (body instanceof String text) {
            payload = text.getBytes(StandardCharsets.UTF_8);
            headers.put(KIND_HEADER, TEXT);
        } else {
            payload = convert(body, headers);
            headers.put(KIND_HEADER, CONVERTED);
            headers.put(TYPE_HEADER, body.getClass().getName());
        }
        return HandlerReply.of(reply, new StoredReply(payload, headers));
    }

    private byte[] convert(Object body, Map<String, String> headers) {
        Message<?> converted = converter == null ? null : converter.toMessage(body, null);
        if (converted == null) {
            throw new IllegalStateException(
                    "Cannot keep a reply of type " + body.getClass().getName()
                            + (converter == null
                                    ? ": no message converter is configured for replies (Jackson on the classpath gives one)"
                                    : ": the reply's message converter "
                                            + converter.getClass().getName() + " cannot convert it")
                            + "; reply with a String, a byte[] or a Message of them");
        }
        Object contentType = converted.getHeaders().get(MessageHeaders.CONTENT_TYPE);
        if (contentType != null && !headers.containsKey(MessageHeaders.CONTENT_TYPE)) {
            headers.put(MessageHeaders.CONTENT_TYPE, contentType.toString());
        }
        Object payload = converted.getPayload();
        if (payload instanceof byte[] bytes) {
            return bytes;
        }
        if (payload instanceof String text) {
            return text.getBytes(StandardCharsets.UTF_8);
        }
        throw new IllegalStateException("The reply's message converter turned a "
                + body.getClass().getName() + " into a " + payload.getClass().getName() + ", neither bytes nor text");
    }

    /**
     * The reply a duplicate is answered with: an object equal to what the listener returned (a
     * {@link Message} again if it returned one, with the headers it kept).
     *
     * @param declaredType the listener method's generic return type, whose payload type a converted
     *     body is read as ({@code byte[]}: the kept bytes as they are)
     * @throws IllegalStateException if a converted body cannot be read back
     */
    public Object decode(StoredReply stored, Type declaredType) {
        ResolvableType declared = ResolvableType.forType(declaredType);
        boolean message = "true".equals(stored.header(MESSAGE_HEADER));
        Class<?> payloadType = Message.class.isAssignableFrom(declared.toClass())
                ? declared.getGeneric(0).resolve(Object.class)
                : declared.resolve(Object.class);
        Object body = body(stored, payloadType);
        if (!message) {
            return body;
        }
        MessageBuilder<Object> builder = MessageBuilder.withPayload(body);
        stored.headers().forEach((name, value) -> {
            if (!name.startsWith("sumi-reply-")) {
                builder.setHeader(name, value);
            }
        });
        return builder.build();
    }

    private Object body(StoredReply stored, Class<?> payloadType) {
        String kind = Objects.requireNonNullElse(stored.header(KIND_HEADER), BYTES);
        return switch (kind) {
            case TEXT -> new String(stored.payload(), StandardCharsets.UTF_8);
            // A declared byte[] takes the kept bytes as they are (what the converter wrote, e.g. JSON).
            case CONVERTED -> payloadType == byte[].class ? stored.payload() : fromConverter(stored, payloadType);
            default -> stored.payload();
        };
    }

    private Object fromConverter(StoredReply stored, Class<?> payloadType) {
        MessageBuilder<byte[]> message = MessageBuilder.withPayload(stored.payload());
        String contentType = stored.header(MessageHeaders.CONTENT_TYPE);
        if (contentType != null) {
            message.setHeader(MessageHeaders.CONTENT_TYPE, MimeType.valueOf(contentType));
        }
        Object body = converter == null ? null : converter.fromMessage(message.build(), payloadType);
        if (body == null) {
            throw new IllegalStateException("Cannot read back a kept reply of type " + stored.header(TYPE_HEADER)
                    + " as " + payloadType.getName()
                    + (converter == null ? ": no message converter is configured for replies" : ""));
        }
        return body;
    }

    private boolean isRequestHeader(String name) {
        if (REQUEST_HEADERS.contains(name) || name.startsWith("sumi-reply-")) {
            return true;
        }
        for (String prefix : requestHeaderPrefixes) {
            if (name.startsWith(prefix)) {
                return true;
            }
        }
        return false;
    }
}
