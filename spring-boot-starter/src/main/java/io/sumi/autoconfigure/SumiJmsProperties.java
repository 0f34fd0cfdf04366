package io.sumi.autoconfigure;

import java.time.Duration;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * The Spring JMS binder, under {@code sumi.jms}. Immutable.
 *
 * @param busyRetryInterval how long a consumer thread waits before it runs a message whose key
 *     another consumer holds again; also the wait before a message awaiting reconciliation is
 *     rolled back
 * @param busyMaxWait the least time a consumer thread holds a busy message (or one awaiting
 *     reconciliation) before it rolls it back to the broker (a redelivery the broker counts towards
 *     its limit); a busy key is held at least until the holder's lease it met has ended, by the
 *     database's clock, however short this is
 * @param deadLetterQueue the queue Sumi sends rejected messages to (no key, invalid key, rejected
 *     fingerprint) in the listener's session; unset: they are rolled back until the broker's
 *     redelivery limit dead-letters them
 * @param passthrough the key passthrough on {@code JmsTemplate} sends
 */
@ConfigurationProperties("sumi.jms")
public record SumiJmsProperties(
        @DefaultValue("1s") Duration busyRetryInterval,
        @DefaultValue("5m") Duration busyMaxWait,
        @Nullable String deadLetterQueue,
        @DefaultValue Passthrough passthrough) {

    /**
     * Passing the message's key downstream as a header.
     *
     * @param enabled whether messages that {@code JmsTemplate} beans convert and send inside a handler get the key
     * @param headerName the header that carries it, written as its JMS-valid property name ({@code -} becomes {@code _})
     */
    public record Passthrough(
            @DefaultValue("true") boolean enabled,
            @DefaultValue("idempotency-key") String headerName) {}
}
