package io.sumi.autoconfigure;

import io.sumi.consumer.LedgerPruner;
import java.util.concurrent.ScheduledFuture;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;
import org.springframework.scheduling.concurrent.ThreadPoolTaskScheduler;
import org.springframework.scheduling.support.CronTrigger;

/**
 * Runs the {@link LedgerPruner} on its cron, on a thread of its own, so the application needs no
 * {@code @EnableScheduling} and its own scheduler is not shared. A failed run is logged and the
 * next run tries again.
 */
public class LedgerPruningScheduler implements SmartLifecycle {

    private static final Logger log = LoggerFactory.getLogger(LedgerPruningScheduler.class);

    private final LedgerPruner pruner;
    private final CronTrigger trigger;
    private @Nullable ThreadPoolTaskScheduler scheduler;
    private @Nullable ScheduledFuture<?> future;

    /**
     * @throws IllegalArgumentException if {@code cron} is not a valid Spring cron expression
     */
    public LedgerPruningScheduler(LedgerPruner pruner, String cron) {
        this.pruner = pruner;
        try {
            this.trigger = new CronTrigger(cron);
        }
        catch (IllegalArgumentException ex) {
            throw new IllegalArgumentException("Invalid sumi.ledger.pruning.cron '" + cron + "': " + ex.getMessage(), ex);
        }
    }

    /** Runs the pruner once now (also what each scheduled run does). */
    public int pruneNow() {
        try {
            return pruner.prune();
        }
        catch (RuntimeException ex) {
            log.warn("Pruning the processed-messages ledger failed; the next run will try again", ex);
            return 0;
        }
    }

    @Override
    public synchronized void start() {
        ThreadPoolTaskScheduler taskScheduler = new ThreadPoolTaskScheduler();
        taskScheduler.setThreadNamePrefix("sumi-ledger-pruner-");
        taskScheduler.setDaemon(true);
        taskScheduler.initialize();
        this.scheduler = taskScheduler;
        this.future = taskScheduler.schedule(this::pruneNow, trigger);
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
