package io.sumi.budget;

import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The background thread of a binder's budget pauser (Kafka's {@code BudgetListenerPauser},
 * RabbitMQ's {@code RabbitBudgetListenerStopper}): from {@link #start()} to {@link #stop()} it runs
 * a check every interval on one daemon thread (a check that throws is logged and run again at the
 * next interval), and it runs tasks that must not run on the caller's thread ({@link #runInBackground}:
 * a container is stopped off its own consumer thread, which the stop waits for). Thread-safe.
 */
final class PeriodicCheck {

    private static final Logger log = LoggerFactory.getLogger(PeriodicCheck.class);

    private final String threadName;
    private final Duration interval;
    private final Runnable check;
    private volatile @Nullable ScheduledExecutorService scheduler;

    /**
     * @param threadName the name of the daemon thread (and of the check, in logs)
     * @param interval how long between the end of a check and the start of the next (positive)
     * @param check what runs every interval
     * @throws IllegalArgumentException if {@code interval} is not positive
     */
    PeriodicCheck(String threadName, Duration interval, Runnable check) {
        if (interval.isNegative() || interval.isZero()) {
            throw new IllegalArgumentException("The check interval must be positive, was " + interval);
        }
        this.threadName = threadName;
        this.interval = interval;
        this.check = check;
    }

    /** Starts the checks (the first one interval from now); does nothing if they run already. */
    public synchronized void start() {
        if (scheduler != null) {
            return;
        }
        ScheduledExecutorService executor = Executors.newSingleThreadScheduledExecutor(this::thread);
        long period = interval.toNanos();
        // runCheck catches and logs its own failures, so the future has nothing to report; stop() ends it.
        ScheduledFuture<?> unused =
                executor.scheduleWithFixedDelay(this::runCheck, period, period, TimeUnit.NANOSECONDS);
        scheduler = executor;
    }

    /** Stops the checks (a check running now is interrupted); {@link #start()} may start them again. */
    public synchronized void stop() {
        ScheduledExecutorService executor = scheduler;
        if (executor != null) {
            executor.shutdownNow();
            scheduler = null;
        }
    }

    /** Whether the checks run ({@link #start()} was called, {@link #stop()} not since). */
    public boolean isRunning() {
        return scheduler != null;
    }

    /** Runs {@code task} on the check's thread, or on a new daemon thread when the checks do not run. */
    public void runInBackground(Runnable task) {
        ScheduledExecutorService executor = scheduler;
        if (executor != null) {
            try {
                executor.execute(task);
                return;
            } catch (RejectedExecutionException stopping) {
                // Stopped meanwhile: a thread of its own, as when never started.
            }
        }
        thread(task).start();
    }

    private void runCheck() {
        try {
            check.run();
        } catch (RuntimeException ex) {
            log.warn("{}: the check failed; the next one, in {}, tries again", threadName, interval, ex);
        }
    }

    private Thread thread(Runnable runnable) {
        Thread thread = new Thread(runnable, threadName);
        thread.setDaemon(true);
        return thread;
    }
}
