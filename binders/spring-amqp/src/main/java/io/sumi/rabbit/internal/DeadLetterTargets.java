package io.sumi.rabbit.internal;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;
import org.springframework.amqp.core.Declarables;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.Queue;
import org.springframework.amqp.rabbit.listener.AbstractMessageListenerContainer;
import org.springframework.amqp.rabbit.listener.ObservableListenerContainer;
import org.springframework.context.ApplicationContext;
import org.springframework.util.ReflectionUtils;

/**
 * Finds a queue's dead-letter exchange and routing key in the {@link Queue} declarations of the
 * container's application context ({@code Queue} and {@code Declarables} beans): RabbitMQ does not
 * tell a client a queue's arguments. Thread-safe.
 */
public final class DeadLetterTargets {

    /** Where a refused message goes. */
    public record DeadLetterTarget(
            String exchange, @Nullable String fixedRoutingKey, String queue) {
        /** The fixed routing key, else the message's own (as RabbitMQ dead-letters). */
        public String routingKey() {
            return fixedRoutingKey != null ? fixedRoutingKey : queue;
        }
    }

    private static final @Nullable Method CONTEXT =
            ReflectionUtils.findMethod(ObservableListenerContainer.class, "getApplicationContext");

    private final Map<String, DeadLetterTarget> found = new ConcurrentHashMap<>();

    /** The dead-letter target of {@code queue}, or {@code null} if no declaration names one. */
    public @Nullable DeadLetterTarget find(AbstractMessageListenerContainer container, String queue, Message message) {
        DeadLetterTarget cached = found.get(queue);
        if (cached == null) {
            cached = lookUp(container, queue);
            if (cached == null) {
                return null;
            }
            found.put(queue, cached);
        }
        if (cached.fixedRoutingKey() == null) {
            String received = message.getMessageProperties().getReceivedRoutingKey();
            return new DeadLetterTarget(cached.exchange(), received != null ? received : queue, queue);
        }
        return cached;
    }

    private static @Nullable DeadLetterTarget lookUp(AbstractMessageListenerContainer container, String queue) {
        if (CONTEXT == null) {
            return null;
        }
        ReflectionUtils.makeAccessible(CONTEXT);
        Object context = ReflectionUtils.invokeMethod(CONTEXT, container);
        if (!(context instanceof ApplicationContext applicationContext)) {
            return null;
        }
        List<Queue> queues = new ArrayList<>(
                applicationContext.getBeansOfType(Queue.class, false, false).values());
        for (Declarables declarables : applicationContext
                .getBeansOfType(Declarables.class, false, false)
                .values()) {
            queues.addAll(declarables.getDeclarablesByType(Queue.class));
        }
        for (Queue candidate : queues) {
            if (!queue.equals(candidate.getActualName()) && !queue.equals(candidate.getName())) {
                continue;
            }
            Object exchange = candidate.getArguments().get("x-dead-letter-exchange");
            if (exchange == null) {
                return null;
            }
            Object routingKey = candidate.getArguments().get("x-dead-letter-routing-key");
            return new DeadLetterTarget(exchange.toString(), routingKey == null ? null : routingKey.toString(), queue);
        }
        return null;
    }
}
