package io.sumi.autoconfigure;

import io.sumi.store.LedgerPruner;

/**
 * Runs the {@link LedgerPruner} on {@code sumi.ledger.pruning.cron}.
 */
public class LedgerPruningScheduler extends CronJob {

    /**
     * @throws IllegalArgumentException if {@code cron} is not a valid Spring cron expression
     */
    public LedgerPruningScheduler(LedgerPruner pruner, String cron) {
        super("ledger-pruner", pruner::prune, "sumi.ledger.pruning.cron", cron);
    }

    /** Prunes once now. */
    public int pruneNow() {
        return runNow();
    }
}
