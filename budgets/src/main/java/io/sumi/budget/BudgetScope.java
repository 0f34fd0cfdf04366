package io.sumi.budget;

/**
 * Whose spending a budget caps ({@code sumi.budgets.<name>.scope}).
 *
 * @since 0.1.0
 */
public enum BudgetScope {

    /**
     * All instances together: spend is reserved in a shared {@link SpendStore} per fixed window
     * aligned to the epoch, in chunks, and the limit is the fleet's. The default when the registry
     * has a store (with the Spring Boot starter: when the ledger's DataSource exists).
     */
    FLEET,

    /** This JVM alone, over a sliding window: N instances spend up to N times the limit. */
    INSTANCE
}
