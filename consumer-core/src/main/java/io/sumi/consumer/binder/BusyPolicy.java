package io.sumi.consumer.binder;

import java.time.Duration;
import java.util.Objects;
import java.util.function.LongSupplier;

/**
 * The one rule every queue binder applies to a busy key (another consumer's live claim,
 * {@link io.sumi.consumer.exception.MessageBusyException}) and to a row awaiting reconciliation
 * ({@link io.sumi.consumer.exception.ReconciliationRequiredException}): the consumer thread keeps
 * the delivery and runs it again in place, every {@link #retryInterval()}, instead of handing it
 * back to the broker, because RabbitMQ quorum queues ({@code x-delivery-limit}), JMS brokers
 * ({@code max-delivery-attempts}) and Kafka share groups count every redelivery and finally
 * dead-letter or drop the message.
 *
 * <p>The bound, per delivery ({@link BusyHold}):
 * <ul>
 *   <li>a busy key is held <em>at least until the holder's lease it first met has ended</em>, by
 *   the database's clock: every retry claims again, and the ledger answers {@code BUSY} only while
 *   {@code lease_until} is ahead of the database's {@code now}. The hold notices the lease's end
 *   when the claim no longer answers busy (the lease ran out: the claim takes the key over and the
 *   handler runs, or the holder completed it: a duplicate) or answers busy with another lease (the
 *   holder renewed it, or another consumer took it over). No JVM clock decides this, so a key whose
 *   holder died is never handed back while its lease lives, however long the lease;</li>
 *   <li>and at least {@link #maxWait()} (measured on this JVM's monotonic clock, a wait of its own,
 *   never compared with another JVM's);</li>
 *   <li>a row awaiting reconciliation changes only when an operator acts: it is held for
 *   {@link #maxWait()};</li>
 *   <li>a message whose claim (or completion) Sumi could not write because the ledger's database is
 *   unreachable ({@link io.sumi.consumer.exception.LedgerUnavailableException}) is held <em>for as
 *   long as the outage lasts</em>, run again every {@link #retryInterval()} (one ledger statement
 *   each): it is not the message's fault, and every delivery handed back would meet the same outage
 *   and only spend the broker's budget until the message is dead-lettered without having run. Only
 *   the container's stop or the thread's interrupt ends that hold.</li>
 * </ul>
 * Past the bound (both conditions met), or when the container stops or the thread is interrupted,
 * the hold ends and the binder hands the delivery back to the broker the way it does for a
 * handler's failure (RabbitMQ: requeue; JMS: session rollback), which the broker counts as one
 * delivery. A holder that keeps renewing its lease (a handler running longer than its lease) thus
 * costs one broker delivery per {@code max(maxWait, lease)} at most; a reconciliation row one per
 * {@code maxWait}, so that its message reaches the dead-letter destination of a queue with a
 * delivery limit, next to its ledger row.
 *
 * <p>Immutable and thread-safe; a {@link BusyHold} is one delivery's and used by one thread.
 *
 * @since 0.1.0
 */
public final class BusyPolicy {

    /** The default wait between two runs of a held message: 1 second. */
    public static final Duration DEFAULT_RETRY_INTERVAL = Duration.ofSeconds(1);

    /** The default least hold of a message: 5 minutes. */
    public static final Duration DEFAULT_MAX_WAIT = Duration.ofMinutes(5);

    /** Waits between two runs. */
    @FunctionalInterface
    public interface Sleeper {
        /** Waits {@code duration}; throws if interrupted. */
        void sleep(Duration duration) throws InterruptedException;
    }

    private final Duration retryInterval;
    private final Duration maxWait;
    private final LongSupplier nanoTime;
    private final Sleeper sleeper;
    private final boolean busyWhileHolderLives;

    private BusyPolicy(Duration retryInterval, Duration maxWait, LongSupplier nanoTime, Sleeper sleeper) {
        this(retryInterval, maxWait, nanoTime, sleeper, false);
    }

    private BusyPolicy(
            Duration retryInterval,
            Duration maxWait,
            LongSupplier nanoTime,
            Sleeper sleeper,
            boolean busyWhileHolderLives) {
        Objects.requireNonNull(retryInterval, "retryInterval");
        Objects.requireNonNull(maxWait, "maxWait");
        if (retryInterval.isNegative() || retryInterval.isZero()) {
            throw new IllegalArgumentException("retryInterval must be positive, was " + retryInterval);
        }
        if (maxWait.isNegative()) {
            throw new IllegalArgumentException("maxWait must not be negative, was " + maxWait);
        }
        this.retryInterval = retryInterval;
        this.maxWait = maxWait;
        this.nanoTime = Objects.requireNonNull(nanoTime, "nanoTime");
        this.sleeper = Objects.requireNonNull(sleeper, "sleeper");
        this.busyWhileHolderLives = busyWhileHolderLives;
    }

    /**
     * This policy, except that a busy key is held for as long as the ledger answers busy, past
     * {@link #maxWait()}: while its holder lives (its lease is renewed) and at most until the
     * holder's max run time stops the renewals and its lease lapses. For a binder whose broker hands
     * a released message back only a few times and whose hold costs the broker nothing: a Kafka
     * share group renews the held record's lock, and there a holder renewing its lease for longer
     * than {@code maxWait} would otherwise cost one counted delivery per {@code maxWait}, until the
     * group archives the record while its holder may still fail. Rows awaiting reconciliation keep
     * the {@code maxWait} bound; an unreachable ledger is held while it lasts, as always.
     *
     * @since 0.1.0
     */
    public BusyPolicy holdingBusyKeysWhileTheirHolderLives() {
        return new BusyPolicy(retryInterval, maxWait, nanoTime, sleeper, true);
    }

    /** Whether a busy key is held for as long as the ledger answers busy ({@link #holdingBusyKeysWhileTheirHolderLives()}). */
    public boolean holdsBusyKeysWhileTheirHolderLives() {
        return busyWhileHolderLives;
    }

    /**
     * A policy that waits {@code retryInterval} between runs and holds a message at least
     * {@code maxWait} (a busy key: also at least until the holder's lease has ended).
     *
     * @throws IllegalArgumentException if {@code retryInterval} is not positive or {@code maxWait} negative
     */
    public static BusyPolicy of(Duration retryInterval, Duration maxWait) {
        return new BusyPolicy(retryInterval, maxWait, System::nanoTime, d -> Thread.sleep(d.toMillis()));
    }

    /** The defaults: 1 s between runs, a least hold of 5 min. */
    public static BusyPolicy ofDefaults() {
        return of(DEFAULT_RETRY_INTERVAL, DEFAULT_MAX_WAIT);
    }

    /** A policy on a given monotonic clock and sleeper (tests move time by hand). */
    public static BusyPolicy of(Duration retryInterval, Duration maxWait, LongSupplier nanoTime, Sleeper sleeper) {
        return new BusyPolicy(retryInterval, maxWait, nanoTime, sleeper);
    }

    /** The wait between two runs of a held message. */
    public Duration retryInterval() {
        return retryInterval;
    }

    /** The least time a message is held before it may be handed back to the broker. */
    public Duration maxWait() {
        return maxWait;
    }

    /** A hold for one delivery; its clock starts now. */
    public BusyHold start() {
        return new BusyHold(this);
    }

    long nanoTime() {
        return nanoTime.getAsLong();
    }

    void sleep() throws InterruptedException {
        sleeper.sleep(retryInterval);
    }
}
