package io.sumi.jms;

import io.sumi.consumer.binder.BusyPolicy;
import java.time.Duration;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * How Sumi's listener wrapper treats the messages Sumi refuses (docs/jms.md).
 *
 * @param busyRetryInterval how long a consumer thread waits before it runs a message whose key is
 *     busy again (also the wait before a row awaiting reconciliation, or a budget refusal without
 *     a stopper, is rolled back)
 * @param busyMaxWait the least time a consumer thread keeps a busy message (or one awaiting
 *     reconciliation) before it rolls it back to the broker (a redelivery the broker counts towards
 *     its limit); a busy key is also kept at least until the holder's lease it met has ended
 *     ({@link BusyPolicy})
 * @param deadLetterQueue the queue Sumi sends rejected messages to itself (no key, invalid key,
 *     rejected fingerprint), in the listener's session; {@code null}: Sumi rolls them back and the
 *     broker's redelivery limit dead-letters them
 */
public record SumiJmsSettings(
        Duration busyRetryInterval,
        Duration busyMaxWait,
        @Nullable String deadLetterQueue) {

    /** The default wait before a busy key is run again: 1 second. */
    public static final Duration DEFAULT_BUSY_RETRY_INTERVAL = BusyPolicy.DEFAULT_RETRY_INTERVAL;

    /** The default bound on a busy message's wait on its consumer thread: 5 minutes. */
    public static final Duration DEFAULT_BUSY_MAX_WAIT = BusyPolicy.DEFAULT_MAX_WAIT;

    public SumiJmsSettings {
        Objects.requireNonNull(busyRetryInterval, "busyRetryInterval");
        Objects.requireNonNull(busyMaxWait, "busyMaxWait");
        if (busyRetryInterval.isNegative() || busyRetryInterval.isZero()) {
            throw new IllegalArgumentException("busyRetryInterval must be positive, was " + busyRetryInterval);
        }
        if (busyMaxWait.isNegative()) {
            throw new IllegalArgumentException("busyMaxWait must not be negative, was " + busyMaxWait);
        }
        if (deadLetterQueue != null && deadLetterQueue.isBlank()) {
            deadLetterQueue = null;
        }
    }

    /** The core's busy policy with these settings' interval and least wait. */
    public BusyPolicy busyPolicy() {
        return BusyPolicy.of(busyRetryInterval, busyMaxWait);
    }

    /** The defaults: 1 s, 5 min, no dead-letter queue of Sumi's (the broker's redelivery limit). */
    public static SumiJmsSettings defaults() {
        return new SumiJmsSettings(DEFAULT_BUSY_RETRY_INTERVAL, DEFAULT_BUSY_MAX_WAIT, null);
    }
}
