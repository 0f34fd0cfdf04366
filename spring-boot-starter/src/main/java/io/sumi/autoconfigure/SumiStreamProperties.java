package io.sumi.autoconfigure;

import io.sumi.stream.StreamSettings;
import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * Sumi's Spring Cloud Stream binder, under {@code sumi.stream}. Immutable.
 *
 * @param busyRetryInterval how often a message whose key another consumer holds (a live lease), or
 *     whose row awaits reconciliation, is claimed again on the listener thread
 * @param busyMaxWait the least time such a message is held in place, per binder attempt, under the
 *     core's busy policy: a busy key at least until the holder's lease it first met has ended (by
 *     the database's clock) and at least this long, a row awaiting reconciliation this long; then
 *     its exception goes to the binder (its retry; then on the Kafka binder without a DLQ the
 *     taught listener container, which delivers it again until the key is free; otherwise the
 *     dead-letter destination). On Kafka keep {@code max-attempts} times the longer of this and the
 *     lease below {@code max.poll.interval.ms}
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
