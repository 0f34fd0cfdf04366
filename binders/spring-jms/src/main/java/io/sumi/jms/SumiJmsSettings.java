package io.sumi.jms;

import java.time.Duration;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * How Sumi's listener wrapper treats the messages Sumi refuses (docs/jms.md).
 *
 * @param busyRetryInterval how long a consumer thread waits before it runs a message whose key is
 *     busy again (also the wait before a row awaiting reconciliation, or a budget refusal without
 *     a stopper, is rolled back)
 * @param busyMaxWait how long a consumer thread keeps a busy message before it rolls it back to the
 *     broker (a redelivery the broker counts towards its limit)
 * @param deadLetterQueue the queue Sumi sends rejected messages to itself (no key, invalid key,
 *     rejected fingerprint), in the listener's session; {@code null}: Sumi rolls them back and the
 *     broker's redelivery limit dead-letters them
 */
public record SumiJmsSettings(
        Duration busyRetryInterval,
        Duration busyMaxWait,
        @Nullable String deadLetterQueue) {

    /** The default wait before a busy key is run again: 1 second. */
    public static final Duration DEFAULT_BUSY_RETRY_INTERVAL = Duration.ofSeconds(1);

    /** The default bound on a busy message's wait on its consumer thread: 5 minutes. */
    public static final Duration DEFAULT_BUSY_MAX_WAIT = Duration.ofMinutes(5);

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

    /** The defaults: 1 s, 5 min, no dead-letter queue of Sumi's (the broker's redelivery limit). */
    public static SumiJmsSettings defaults() {
        return new SumiJmsSettings(DEFAULT_BUSY_RETRY_INTERVAL, DEFAULT_BUSY_MAX_WAIT, null);
    }
}
