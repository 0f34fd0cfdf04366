package io.sumi.outbox;

import java.time.Duration;
import java.util.Objects;

/**
 * How long a row waits after a failed send: {@code initial}, multiplied by {@code multiplier}
 * after each further failure, capped at {@code max}, then shortened by a random part of up to
 * {@code jitter} (so rows that failed together do not all come back at the same moment, and the
 * cap is never exceeded). Immutable.
 *
 * <p>With the defaults (30 s doubling, capped at 15 min, 20 % jitter) the waits after failures 1,
 * 2, 3, ... are at most 30 s, 1 min, 2 min, 4 min, 8 min, 15 min, 15 min, ...
 *
 * @param initial the wait after the first failure
 * @param multiplier the growth per further failure (at least 1)
 * @param max the longest wait
 * @param jitter the largest random reduction, as a fraction of the wait (0 to 1)
 */
public record OutboxBackoff(Duration initial, double multiplier, Duration max, double jitter) {

    /** The default wait after the first failure. */
    public static final Duration DEFAULT_INITIAL = Duration.ofSeconds(30);

    /** The default growth per failure. */
    public static final double DEFAULT_MULTIPLIER = 2.0;

    /** The default cap. */
    public static final Duration DEFAULT_MAX = Duration.ofMinutes(15);

    /** The default jitter. */
    public static final double DEFAULT_JITTER = 0.2;

    /** The defaults: 30 s doubling, capped at 15 min, 20 % jitter. */
    public static final OutboxBackoff DEFAULT =
            new OutboxBackoff(DEFAULT_INITIAL, DEFAULT_MULTIPLIER, DEFAULT_MAX, DEFAULT_JITTER);

    /**
     * @throws IllegalArgumentException if a duration is not positive, {@code max < initial},
     *     {@code multiplier < 1} or {@code jitter} is outside [0, 1]
     */
    public OutboxBackoff {
        Objects.requireNonNull(initial, "initial");
        Objects.requireNonNull(max, "max");
        if (initial.isNegative() || initial.isZero()) {
            throw new IllegalArgumentException("The initial backoff must be positive, was " + initial);
        }
        if (max.compareTo(initial) < 0) {
            throw new IllegalArgumentException(
                    "The maximum backoff (" + max + ") must not be below the initial one (" + initial + ")");
        }
        if (!(multiplier >= 1.0) || Double.isInfinite(multiplier)) {
            throw new IllegalArgumentException("The backoff multiplier must be at least 1, was " + multiplier);
        }
        if (!(jitter >= 0.0 && jitter <= 1.0)) {
            throw new IllegalArgumentException("The backoff jitter must be between 0 and 1, was " + jitter);
        }
    }

    /**
     * The wait after the {@code failures}-th failure.
     *
     * @param failures how many sends have failed, including the one just now (at least 1)
     * @param random a number in [0, 1) that picks the jitter
     */
    public Duration delay(int failures, double random) {
        if (failures < 1) {
            throw new IllegalArgumentException("failures must be at least 1, was " + failures);
        }
        double nanos = (double) initial.toNanos() * Math.pow(multiplier, failures - 1);
        double capped = Math.min(nanos, (double) max.toNanos());
        return Duration.ofNanos((long) (capped * (1.0 - jitter * random)));
    }
}
