package io.sumi.autoconfigure;

import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * The Spring AMQP binder, under {@code sumi.rabbit}. Immutable.
 *
 * @param busyRetryInterval how long a consumer thread waits before it requeues a message whose key
 *     another consumer holds (or that awaits reconciliation); without budgets stopper, also before a
 *     budget refusal is requeued
 * @param passthrough the key passthrough on {@code RabbitTemplate} sends
 */
@ConfigurationProperties("sumi.rabbit")
public record SumiRabbitProperties(
        @DefaultValue("1s") Duration busyRetryInterval,
        @DefaultValue Passthrough passthrough) {

    /**
     * @param enabled whether messages sent with a {@code RabbitTemplate} bean inside a handler get the key
     * @param headerName the message header that carries it
     */
    public record Passthrough(
            @DefaultValue("true") boolean enabled,
            @DefaultValue("idempotency-key") String headerName) {}
}
