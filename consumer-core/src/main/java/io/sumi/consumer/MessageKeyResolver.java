package io.sumi.consumer;

import io.sumi.consumer.exception.InvalidIdempotencyKeyException;
import io.sumi.consumer.exception.MissingIdempotencyKeyException;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;
import org.springframework.expression.Expression;
import org.springframework.expression.ExpressionException;
import org.springframework.expression.spel.standard.SpelExpressionParser;
import org.springframework.expression.spel.support.StandardEvaluationContext;

/**
 * Finds a message's idempotency key: the first non-blank header of
 * {@link HandlerDefinition#keyHeaders()}, else the handler's SpEL key expression over
 * {@code #message}, {@code #payload} and {@code #headers}. Thread-safe; parsed expressions are cached.
 */
public final class MessageKeyResolver {

    private final SpelExpressionParser parser = new SpelExpressionParser();
    private final Map<String, Expression> expressions = new ConcurrentHashMap<>();

    /**
     * Parses an expression now, so a typo fails at start-up rather than on the first message.
     *
     * @throws IllegalArgumentException if the expression does not parse
     */
    public void validate(HandlerDefinition handler) {
        if (handler.keyExpression() != null) {
            expression(handler);
        }
    }

    /**
     * The key of {@code message}.
     *
     * @throws MissingIdempotencyKeyException if no header holds a key and the expression is absent,
     *     fails, or yields null or blank
     */
    public String resolve(HandlerDefinition handler, InboundMessage message) {
        for (String header : handler.keyHeaders()) {
            String value;
            try {
                value = InboundMessage.text(message.header(header));
            } catch (InvalidIdempotencyKeyException ex) {
                throw new InvalidIdempotencyKeyException("Header '" + header + "' of a message of consumer '"
                        + handler.consumer() + "': " + ex.getMessage());
            }
            if (value != null && !value.isBlank()) {
                return value;
            }
        }
        if (handler.keyExpression() == null) {
            throw new MissingIdempotencyKeyException(
                    "No idempotency key for a message of consumer '" + handler.consumer()
                            + "': none of the headers " + handler.keyHeaders()
                            + " is set (an empty or blank value counts as not set)"
                            + " and the handler has no key expression"
                            + " (send one of those headers, e.g. through the Sumi outbox, or set @IdempotentHandler(key = \"...\"))");
        }
        Object value;
        try {
            StandardEvaluationContext context = new StandardEvaluationContext(message.source());
            context.setVariable("message", message.source());
            context.setVariable("payload", message.payload());
            context.setVariable("headers", decoded(message.headers()));
            value = expression(handler).getValue(context);
        } catch (ExpressionException | ClassCastException | NullPointerException ex) {
            throw new MissingIdempotencyKeyException(
                    "The key expression '" + handler.keyExpression() + "' of consumer '" + handler.consumer()
                            + "' failed on a message: " + ex.getMessage(),
                    ex);
        }
        String key = value == null ? null : InboundMessage.text(value);
        if (key == null || key.isBlank()) {
            throw new MissingIdempotencyKeyException(
                    "The key expression '" + handler.keyExpression() + "' of consumer '" + handler.consumer()
                            + "' yielded " + (key == null ? "null" : "a blank key") + " for a message");
        }
        return key;
    }

    /**
     * The headers as {@code #headers} shows them: byte arrays decoded as UTF-8 (as documented on
     * {@link IdempotentHandler#key()}), those that are not valid UTF-8 left as bytes, which
     * {@link InboundMessage#text} rejects if the expression makes a key of them.
     */
    private static Map<String, @Nullable Object> decoded(Map<String, @Nullable Object> headers) {
        if (headers.values().stream().noneMatch(byte[].class::isInstance)) {
            return headers;
        }
        Map<String, @Nullable Object> decoded = new LinkedHashMap<>();
        headers.forEach((name, value) -> decoded.put(name, InboundMessage.headerValue(value)));
        return decoded;
    }

    private Expression expression(HandlerDefinition handler) {
        String text = handler.keyExpression();
        return expressions.computeIfAbsent(text, source -> {
            try {
                return parser.parseExpression(source);
            } catch (ExpressionException ex) {
                throw new IllegalArgumentException(
                        "Invalid key expression '" + source + "' of consumer '" + handler.consumer() + "': "
                                + ex.getMessage(),
                        ex);
            }
        });
    }
}
