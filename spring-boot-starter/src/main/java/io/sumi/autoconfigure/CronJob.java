package io.sumi.autoconfigure;

import java.util.concurrent.ScheduledFuture;
import java.util.function.IntSupplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;
import org.springframework.scheduling.concurrent.ThreadPoolTaskScheduler;
import org.springframework.scheduling.support.CronTrigger;

/**
 * A housekeeping job (ledger pruning, outbox retention) run on its cron on a thread of its own,
 * so the application needs no {@code @EnableScheduling} and its own scheduler is not shared. A
 * failed run is logged and the next run tries again.
 */
abstract class CronJob implements SmartLifecycle {

    private static final Logger log = LoggerFactory.getLogger(CronJob.class);

    private final String name;
    private final IntSupplier job;
    private final CronTrigger trigger;
    private @Nullable ThreadPoolTaskScheduler scheduler;
    private @Nullable ScheduledFuture<?> future;

    /**
     * @param name names the job in thread names and logs
     * @param cronProperty the property {@code cron} came from, for the error message
     * @throws IllegalArgumentException if {@code cron} is not a valid Spring cron expression
     */
    protected CronJob(String name, IntSupplier job, String cronProperty, String cron) {
        this.name = name;
        this.job = job;
        try {
            this.trigger = new CronTrigger(cron);
        } catch (IllegalArgumentException ex) {
            throw new IllegalArgumentException("Invalid " + cronProperty + " '" + cron + "': " + ex.getMessage(), ex);
        }
    }

    /** Runs the job once now (also what each scheduled run does); 0 if it failed. */
    public int runNow() {
        try {
            return job.getAsInt();
        } catch (RuntimeException ex) {
            log.warn("The {} job failed; the next run will try again", name, ex);
            return 0;
        }
    }

    @Override
    public synchronized void start() {
        ThreadPoolTaskScheduler taskScheduler = new ThreadPoolTaskScheduler();
        taskScheduler.setThreadNamePrefix("sumi-" + name + "-");
        taskScheduler.setDaemon(true);
        taskScheduler.initialize();
        this.scheduler = taskScheduler;
        this.future = taskScheduler.schedule(this::runNow, trigger);
    }

    @Override
    public synchronized void stop() {
        if (future != null) {
            future.cancel(false);
            future = null;
        }
        if (scheduler != null) {
            scheduler.shutdown();
            scheduler = null;
        }
    }

    @Override
    public synchronized boolean isRunning() {
        return scheduler != null;
    }
}
