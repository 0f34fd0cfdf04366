package io.sumi.consumer.model;

import io.sumi.consumer.IdempotencyMode;

/**
 * The set-up of one model run: the handler's mode, which instances put Caffeine's front cache
 * ({@code CachingProcessedMessageStore}) before the ledger, whether the executors are wrapped in
 * the budget decorator (sumi-budgets: only its model tests run budgeted configurations), whether the last instance is wired with the transaction manager of
 * another resource (a misconfiguration the ledger must refuse, not turn into a loss), and
 * whether instance 1's clock runs ahead of the others by more than a lease (lease decisions must
 * not depend on the instances agreeing on the time).
 *
 * @param cacheMask bit {@code i} set: instance {@code i} caches completed keys
 */
record ModelConfig(
        IdempotencyMode mode, int cacheMask, boolean budgeted, boolean foreignTransactionManager, boolean skewedClock) {

    static ModelConfig config(
            IdempotencyMode mode,
            int cacheMask,
            boolean budgeted,
            boolean foreignTransactionManager,
            boolean skewedClock) {
        return new ModelConfig(mode, cacheMask, budgeted, foreignTransactionManager, skewedClock);
    }

    boolean cache(int instance) {
        return (cacheMask & (1 << instance)) != 0;
    }

    boolean transactional() {
        return mode == IdempotencyMode.TRANSACTIONAL;
    }

    @Override
    public String toString() {
        return "config(" + mode + ", " + cacheMask + ", " + budgeted + ", " + foreignTransactionManager + ", "
                + skewedClock + ")";
    }
}
