package io.sumi.autoconfigure;

import io.sumi.stream.StreamSettings;
import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * Sumi's Spring Cloud Stream binder, under {@code sumi.stream}. Immutable.
 *
 * @param busyRetryInterval how often a message whose key another consumer holds (a live lease) is
 *     claimed again on the listener thread
 * @param busyMaxWait how long such a message is retried in place, per binder attempt, before its
 *     {@code MessageBusyException} goes to the binder (its retry; then on the Kafka binder without
 *     a DLQ the taught listener container, which delivers it again until the key is free; with a
 *     DLQ and on Rabbit the dead-letter destination); {@code 0s} hands it over at once. On Kafka
 *     keep {@code max-attempts} times it below {@code max.poll.interval.ms}
 * @param propagateKey whether messages sent while an idempotent function runs ({@code StreamBridge}
 *     sends, a {@code Function}'s output) get the message's key in {@code keyHeader}, unless they
 *     set that header themselves
 * @param keyHeader the header the key is passed on in
 */
@ConfigurationProperties("sumi.stream")
public record SumiStreamProperties(
        @DefaultValue("1s") Duration busyRetryInterval,
        @DefaultValue("30s") Duration busyMaxWait,
        @DefaultValue("true") boolean propagateKey,
        @DefaultValue(StreamSettings.DEFAULT_KEY_HEADER) String keyHeader) {

    /** These properties as the binder's settings. */
    public StreamSettings settings() {
        return new StreamSettings(busyRetryInterval, busyMaxWait, propagateKey ? keyHeader : null);
    }
}
