package io.sumi.outbox.rabbit;

import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * Where an outbox topic is published on RabbitMQ: an exchange, and a fixed routing key or
 * ({@code null}) the row's aggregate id. The exchange {@code ""} is RabbitMQ's default exchange,
 * which routes to the queue named by the routing key.
 *
 * @param exchange the exchange name
 * @param routingKey the routing key, or {@code null} for the row's aggregate id (so a consistent-hash
 *     exchange keeps an aggregate's rows on one queue, in order)
 */
public record RabbitDestination(String exchange, @Nullable String routingKey) {

    public RabbitDestination {
        Objects.requireNonNull(exchange, "exchange");
    }

    /** The default for a topic without configuration: the exchange named like the topic, keyed by aggregate id. */
    public static RabbitDestination forTopic(String topic) {
        return new RabbitDestination(topic, null);
    }

    /** The routing key for a row of {@code aggregateId}. */
    public String routingKey(String aggregateId) {
        return routingKey != null ? routingKey : aggregateId;
    }
}
