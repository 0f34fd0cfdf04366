package io.sumi.outbox;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Hands a batch to the {@link OutboxPublisher} with what is left of its send deadline, and
 * interrupts the dispatching thread if the publisher has not returned {@code grace} after it (see
 * {@link OutboxPublisher}); the interrupt is cleared again before this returns, so the marks can
 * run. A publisher that throws fails the whole batch. Thread-safe (one timer thread per JVM).
 */
final class SendDeadline {

    private static final Logger log = LoggerFactory.getLogger(OutboxDispatcher.class);

    private final OutboxPublisher publisher;
    private final Duration sendTimeout;
    private final Duration grace;

    SendDeadline(OutboxPublisher publisher, Duration sendTimeout, Duration grace) {
        this.publisher = publisher;
        this.sendTimeout = sendTimeout;
        this.grace = grace;
    }

    /**
     * Publishes {@code records} by {@code deadline} (a {@link System#nanoTime()} value).
     *
     * @return the publisher's result, or every record failed if the publisher threw or the
     *     deadline had already passed (then nothing is handed to the publisher)
     */
    PublishResult publish(List<OutboxRecord> records, long deadline) {
        List<OutboxRecord> batch = List.copyOf(records);
        long left = deadline - System.nanoTime();
        if (left <= 0) {
            // The claim itself took the whole send timeout: send nothing, count an attempt.
            return allFailed(
                    records,
                    new TimeoutException(
                            "Not sent: the claim took longer than the send timeout (" + sendTimeout + ")"));
        }
        DeadlineInterrupt interrupt = new DeadlineInterrupt(Thread.currentThread());
        ScheduledFuture<?> timer =
                DeadlineInterrupt.TIMER.schedule(interrupt, left + grace.toNanos(), TimeUnit.NANOSECONDS);
        try {
            return publisher.publish(batch, Duration.ofNanos(left));
        } catch (RuntimeException ex) {
            return allFailed(records, ex);
        } finally {
            timer.cancel(false);
            if (interrupt.disarm()) {
                // Our own interrupt, not a request to stop: clear it so that the marks can run.
                Thread.interrupted();
                log.warn(
                        "The outbox publisher had not returned {} after the batch's send timeout ({}); it was"
                                + " interrupted",
                        grace,
                        sendTimeout);
            }
        }
    }

    private static PublishResult allFailed(List<OutboxRecord> records, Throwable failure) {
        Map<Long, Throwable> all = new LinkedHashMap<>();
        for (OutboxRecord record : records) {
            all.put(record.id(), failure);
        }
        return PublishResult.failed(all);
    }

    /**
     * Interrupts a dispatching thread whose publisher outlives the batch's deadline, unless it has
     * been disarmed first. Race: the timer may fire while the publisher returns; both sides hold
     * the monitor, so the thread is interrupted only while it is still publishing, and the
     * dispatcher knows whether it was.
     */
    private static final class DeadlineInterrupt implements Runnable {

        static final ScheduledThreadPoolExecutor TIMER = timer();

        private final Thread thread;
        private boolean armed = true;
        private boolean fired;

        DeadlineInterrupt(Thread thread) {
            this.thread = thread;
        }

        @Override
        public synchronized void run() {
            if (armed) {
                fired = true;
                thread.interrupt();
            }
        }

        /** Disarms; returns whether it fired. */
        synchronized boolean disarm() {
            armed = false;
            return fired;
        }

        private static ScheduledThreadPoolExecutor timer() {
            ScheduledThreadPoolExecutor timer = new ScheduledThreadPoolExecutor(1, runnable -> {
                Thread thread = new Thread(runnable, "sumi-outbox-deadline");
                thread.setDaemon(true);
                return thread;
            });
            timer.setRemoveOnCancelPolicy(true);
            return timer;
        }
    }
}
