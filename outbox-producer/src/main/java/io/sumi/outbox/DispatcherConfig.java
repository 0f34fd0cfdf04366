package io.sumi.outbox;

import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.time.Instant;
import java.util.function.DoubleSupplier;
import org.jspecify.annotations.Nullable;

/**
 * An {@link OutboxDispatcher}'s settings, checked by {@link OutboxDispatcher.Builder#build()}
 * (each setter checks its own value, {@code build()} the rules between values). Immutable; shared
 * by the {@link DispatchRound} and the {@link DispatchLoop} of one dispatcher.
 */
record DispatcherConfig(
        OutboxTable table,
        OutboxPublisher publisher,
        int batchSize,
        Duration lease,
        Duration sendTimeout,
        int maxAttempts,
        OutboxBackoff backoff,
        TopicSet orderedTopics,
        TopicSet shadowTopics,
        @Nullable Instant cutoff,
        Duration minPollInterval,
        Duration maxPollInterval,
        DoubleSupplier jitter,
        MeterRegistry meterRegistry,
        int pipelineDepth,
        Duration pollDelay,
        Duration statisticsCheckInterval) {

    /** The longest wait past the deadline for a publisher to return by itself before it is interrupted. */
    static final Duration MAX_DEADLINE_GRACE = Duration.ofSeconds(1);

    /**
     * @throws IllegalArgumentException if the send timeout is more than half the lease, or the
     *     minimum poll interval exceeds the maximum
     */
    DispatcherConfig {
        if (sendTimeout.multipliedBy(2).compareTo(lease) > 0) {
            throw new IllegalArgumentException("The outbox send timeout (" + sendTimeout + ") must be at most half the"
                    + " lease (" + lease
                    + "): a batch may take the whole send timeout, and the rest of the lease is the"
                    + " margin that keeps other dispatchers from sending the same rows while this one records what it"
                    + " sent. Raise the lease (sumi.outbox.dispatcher.lease) or lower the send timeout"
                    + " (sumi.outbox.dispatcher.send-timeout).");
        }
        if (minPollInterval.compareTo(maxPollInterval) > 0) {
            throw new IllegalArgumentException("The outbox minimum poll interval (" + minPollInterval
                    + ") must not exceed the maximum (" + maxPollInterval + ")");
        }
    }

    /** How long past the send deadline a publisher may take to return by itself: a tenth of the send timeout, at most 1 s. */
    Duration deadlineGrace() {
        Duration tenth = sendTimeout.dividedBy(10);
        return tenth.compareTo(MAX_DEADLINE_GRACE) < 0 ? tenth : MAX_DEADLINE_GRACE;
    }
}
