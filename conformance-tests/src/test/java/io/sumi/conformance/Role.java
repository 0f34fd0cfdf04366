package io.sumi.conformance;

/**
 * The listeners every kind's application declares, one destination each. The {@code PLAIN_*} ones
 * have no {@code @IdempotentHandler}: they are the negative controls.
 */
public enum Role {
    /** Lease mode, a retrying container (failures are redelivered), dead letters visible. */
    LEASE,
    /** {@link #LEASE}'s listener without Sumi. */
    PLAIN,
    /** Lease mode on a destination whose broker counts redeliveries (or a Kafka handler without retries). */
    HELD,
    /** {@link #HELD}'s listener without Sumi. */
    PLAIN_HELD,
    /** Transactional mode, @Transactional with the ledger's DataSource; a transacted container. */
    TX,
    /** {@link #TX}'s listener without Sumi. */
    PLAIN_TX,
    /** Lease mode, MANUAL acknowledgement. */
    MANUAL,
    /** Lease mode, MANUAL acknowledgement, prefetch 2: the handler may keep a delivery unacknowledged. */
    MANUAL_DEFER,
    /** Lease mode, the listener returns a CompletableFuture. */
    ASYNC,
    /** {@link #ASYNC}'s listener without Sumi. */
    PLAIN_ASYNC,
    /**
     * Lease mode with a 3 s lease, in a container of its own: the ledger-down scenarios leave its
     * claims to lapse, and stop and start its container.
     */
    LEDGER_DOWN,
    /**
     * Lease mode, a retrying container of one consumer that a scenario stops and starts (through
     * the kind's endpoint registry): no other scenario uses it.
     */
    STOP,
    /**
     * Lease mode, bound to the kind's budget ({@link BudgetWindow}: {@value BudgetWindow#LIMIT}
     * calls a window), on a retrying container of one consumer.
     */
    BUDGET;

    /** The destination's name part. */
    public String slug() {
        return name().toLowerCase(java.util.Locale.ROOT).replace('_', '-');
    }
}
