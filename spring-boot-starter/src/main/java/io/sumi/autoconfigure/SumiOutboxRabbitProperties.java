package io.sumi.autoconfigure;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * The outbox's RabbitMQ publisher, under {@code sumi.outbox.rabbit} (used when {@code spring-rabbit}
 * is on the class path, a Spring AMQP {@code ConnectionFactory} bean exists and no other
 * {@code OutboxPublisher} bean does). Immutable.
 *
 * @param enabled whether the RabbitMQ publisher is created
 * @param topics the outbox topics sent to RabbitMQ; empty: every topic when there is no Kafka
 *     publisher, none when there is one (the Kafka publisher keeps them all). Rows of the other topics go
 *     to the Kafka publisher when there is one, else they fail (and are parked after
 *     {@code sumi.outbox.dispatcher.max-attempts}) with an error that names their topic
 * @param routes the exchange and routing key of a topic; a topic without a route goes to the
 *     exchange named like it, with the row's aggregate id as routing key
 * @param contentType the messages' content type ({@code text/plain}: a {@code String} listener
 *     parameter gets the payload as text)
 * @param sendTimeout the bound on the confirms of one batch; {@code sumi.outbox.dispatcher.send-timeout}
 *     when not set, and never more than that
 */
@ConfigurationProperties("sumi.outbox.rabbit")
public record SumiOutboxRabbitProperties(
        @DefaultValue("true") boolean enabled,
        @DefaultValue List<String> topics,
        @DefaultValue Map<String, Route> routes,
        @DefaultValue("text/plain") String contentType,
        @Nullable Duration sendTimeout) {

    /**
     * Where the records of one topic go.
     *
     * @param exchange the exchange ({@code ""}: the default exchange, which routes to the queue the
     *     routing key names)
     * @param routingKey a fixed routing key; unset: the row's aggregate id
     */
    public record Route(
            @DefaultValue("") String exchange, @Nullable String routingKey) {}
}
