package io.sumi.stream;

import io.sumi.consumer.HandlerDefinition;
import io.sumi.consumer.binder.BusyPolicy;
import java.time.Duration;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * How idempotent Spring Cloud Stream functions treat busy keys and pass their key on. Immutable;
 * {@link #ofDefaults()} or the canonical constructor, which validates.
 *
 * @param busyRetryInterval how often a message whose key another consumer holds (a live lease), or
 *     whose row awaits reconciliation, is claimed again, on the listener thread, before the binder
 *     sees a failure
 * @param busyMaxWait the least time such a message is held in place, per binder attempt, under the
 *     core's {@link BusyPolicy}: a busy key is held at least until the holder's lease it first met
 *     has ended (by the database's clock) <em>and</em> at least this long, a row awaiting
 *     reconciliation this long; then its exception goes to the binder (its retry; then, on the
 *     Kafka binder without a DLQ, the listener container taught by
 *     {@link SumiKafkaBinderContainerCustomizer}, which delivers it again until the key is free;
 *     otherwise the dead-letter destination). {@code Duration.ZERO}: hold a busy key only until
 *     that lease ended. On Kafka, keep {@code max-attempts} times the longer of this and
 *     {@code sumi.consumer.lease} below the consumer's {@code max.poll.interval.ms}
 * @param keyHeader the header that messages sent while an idempotent function runs (a
 *     {@code Function}'s output, {@code StreamBridge} sends) get the message's key in, unless
 *     they set it themselves; {@code null}: do not add it
 */
public record StreamSettings(
        Duration busyRetryInterval,
        Duration busyMaxWait,
        @Nullable String keyHeader) {

    /** Default {@link #busyRetryInterval()}: 1 second. */
    public static final Duration DEFAULT_BUSY_RETRY_INTERVAL = Duration.ofSeconds(1);

    /** Default {@link #busyMaxWait()}: 30 seconds. */
    public static final Duration DEFAULT_BUSY_MAX_WAIT = Duration.ofSeconds(30);

    /** Default {@link #keyHeader()}: {@value HandlerDefinition#IDEMPOTENCY_KEY_HEADER}. */
    public static final String DEFAULT_KEY_HEADER = HandlerDefinition.IDEMPOTENCY_KEY_HEADER;

    /**
     * @throws IllegalArgumentException if the interval is not positive, the wait negative or the header blank
     */
    public StreamSettings {
        Objects.requireNonNull(busyRetryInterval, "busyRetryInterval");
        Objects.requireNonNull(busyMaxWait, "busyMaxWait");
        if (busyRetryInterval.isNegative() || busyRetryInterval.isZero()) {
            throw new IllegalArgumentException("busyRetryInterval must be positive, was " + busyRetryInterval);
        }
        if (busyMaxWait.isNegative()) {
            throw new IllegalArgumentException("busyMaxWait must not be negative, was " + busyMaxWait);
        }
        if (keyHeader != null && keyHeader.isBlank()) {
            throw new IllegalArgumentException("keyHeader must not be blank (use null to add no header)");
        }
    }

    /** The core's busy policy with {@link #busyRetryInterval()} and {@link #busyMaxWait()}. */
    public BusyPolicy busyPolicy() {
        return BusyPolicy.of(busyRetryInterval, busyMaxWait);
    }

    /** Hold busy keys (claimed every second) at least 30 seconds; pass the key on in {@code idempotency-key}. */
    public static StreamSettings ofDefaults() {
        return new StreamSettings(DEFAULT_BUSY_RETRY_INTERVAL, DEFAULT_BUSY_MAX_WAIT, DEFAULT_KEY_HEADER);
    }
}
