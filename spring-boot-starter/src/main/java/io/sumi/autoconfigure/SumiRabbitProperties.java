package io.sumi.autoconfigure;

import io.sumi.consumer.binder.BusyPolicy;
import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * The Spring AMQP binder, under {@code sumi.rabbit}. Immutable.
 *
 * @param busyRetryInterval how long a consumer thread waits before it runs a held message whose key
 *     another consumer holds (or that awaits reconciliation) again; also the wait before such a
 *     message past its hold, or a budget refusal without a budget stopper, is requeued
 * @param busyMaxWait the least time a consumer thread holds such a message in place before it
 *     requeues it (a delivery quorum queues count toward {@code x-delivery-limit}); a busy key is
 *     held at least until the holder's lease it met has ended, by the database's clock, however
 *     short this is
 * @param passthrough the key passthrough on {@code RabbitTemplate} sends
 */
@ConfigurationProperties("sumi.rabbit")
public record SumiRabbitProperties(
        @DefaultValue("1s") Duration busyRetryInterval,
        @DefaultValue("5m") Duration busyMaxWait,
        @DefaultValue Passthrough passthrough) {

    /** The core's busy policy with these properties. */
    public BusyPolicy busyPolicy() {
        return BusyPolicy.of(busyRetryInterval, busyMaxWait);
    }

    /**
     * Passing the message's key downstream as a header.
     *
     * @param enabled whether messages sent with a {@code RabbitTemplate} bean inside a handler get the key
     * @param headerName the message header that carries it
     */
    public record Passthrough(
            @DefaultValue("true") boolean enabled,
            @DefaultValue("idempotency-key") String headerName) {}
}
