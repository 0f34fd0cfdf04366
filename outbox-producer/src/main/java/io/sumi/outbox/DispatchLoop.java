package io.sumi.outbox;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The thread that runs an {@link OutboxDispatcher}'s rounds: back to back while they find rows;
 * after an empty (or failed) round it waits {@code minPollInterval}, doubling after each further
 * empty round up to {@code maxPollInterval}; {@link #wakeUp()} ends a wait at once and resets it to
 * the minimum. Owns the thread, the wake-ups and the lifecycle, nothing of a round.
 *
 * <p>Thread-safe.
 */
final class DispatchLoop {

    private static final Logger log = LoggerFactory.getLogger(OutboxDispatcher.class);

    private static final AtomicInteger THREADS = new AtomicInteger();

    /** Runs one round; returns whether to run the next one at once (it found rows). */
    private final BooleanSupplier round;

    private final Duration minPollInterval;
    private final Duration maxPollInterval;

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition wakeUpCondition = lock.newCondition();
    private boolean wakeUpRequested;
    private volatile boolean running;
    private @Nullable Thread thread;
    private int consecutiveErrors;

    DispatchLoop(BooleanSupplier round, Duration minPollInterval, Duration maxPollInterval) {
        this.round = round;
        this.minPollInterval = minPollInterval;
        this.maxPollInterval = maxPollInterval;
    }

    /** See {@link OutboxDispatcher#wakeUp()}. */
    void wakeUp() {
        lock.lock();
        try {
            wakeUpRequested = true;
            wakeUpCondition.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** Starts the loop on a daemon thread of its own; returns {@code false} if it was running already. */
    synchronized boolean start() {
        if (running) {
            return false;
        }
        running = true;
        Thread loop = new Thread(this::loop, "sumi-outbox-dispatcher-" + THREADS.incrementAndGet());
        loop.setDaemon(true);
        this.thread = loop;
        loop.start();
        return true;
    }

    /** See {@link OutboxDispatcher#stop(Duration)}. */
    void stop(Duration timeout) {
        Thread loop;
        synchronized (this) {
            if (!running) {
                return;
            }
            running = false;
            loop = thread;
            thread = null;
        }
        wakeUp();
        if (loop != null && loop != Thread.currentThread()) {
            try {
                loop.join(timeout.toMillis());
                if (loop.isAlive()) {
                    loop.interrupt();
                    loop.join(1000);
                }
            } catch (InterruptedException ex) {
                Thread.currentThread().interrupt();
            }
        }
    }

    boolean isRunning() {
        return running;
    }

    private void loop() {
        Duration interval = minPollInterval;
        while (running) {
            boolean foundRows;
            try {
                foundRows = round.getAsBoolean();
                if (consecutiveErrors > 0) {
                    log.info("The outbox dispatcher works again after {} failed round(s)", consecutiveErrors);
                }
                consecutiveErrors = 0;
            } catch (RuntimeException ex) {
                foundRows = false;
                consecutiveErrors++;
                if (consecutiveErrors == 1) {
                    log.warn("An outbox dispatch round failed; retrying with backoff", ex);
                } else {
                    log.warn(
                            "An outbox dispatch round failed again ({} in a row): {}",
                            consecutiveErrors,
                            DispatchRound.summary(ex));
                }
            }
            if (foundRows || !running) {
                // Busy: go on at once, more rows (or the next rows of an aggregate) may be due.
                interval = minPollInterval;
                continue;
            }
            boolean woken = awaitWakeUp(interval);
            interval = woken ? minPollInterval : min(interval.multipliedBy(2), maxPollInterval);
        }
    }

    /** Waits up to {@code timeout} for {@link #wakeUp()}; returns whether it came. */
    private boolean awaitWakeUp(Duration timeout) {
        lock.lock();
        try {
            long nanos = timeout.toNanos();
            while (!wakeUpRequested && running && nanos > 0) {
                nanos = wakeUpCondition.awaitNanos(nanos);
            }
            boolean woken = wakeUpRequested;
            wakeUpRequested = false;
            return woken;
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            running = false;
            return false;
        } finally {
            lock.unlock();
        }
    }

    private static Duration min(Duration a, Duration b) {
        return a.compareTo(b) <= 0 ? a : b;
    }
}
