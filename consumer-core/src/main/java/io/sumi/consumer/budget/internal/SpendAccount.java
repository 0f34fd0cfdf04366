package io.sumi.consumer.budget.internal;

import io.sumi.consumer.budget.BudgetConfig;
import java.time.Instant;
import org.jspecify.annotations.Nullable;

/**
 * Where a budget's spend is counted: in this JVM ({@link LocalSpendAccount}, a sliding window) or
 * in a shared store for the whole fleet ({@link FleetSpendAccount}, fixed windows, chunks). Called
 * only under the owning budget's lock.
 */
interface SpendAccount {

    /** The cost one permitted call counts for; changed through the account only. */
    interface Reservation {
        double cost();
    }

    /**
     * Reserves {@code cost} if it fits.
     *
     * @return the reservation, or {@code null} if it does not fit
     * @throws SpendStoreUnavailableException if the shared store could not answer (fail closed)
     */
    @Nullable
    Reservation tryReserve(Instant now, double cost, BudgetConfig config);

    /** Replaces the cost of a reservation (a cost recorded after the call). */
    void setCost(Reservation reservation, double cost, Instant now, BudgetConfig config);

    /** Gives a reservation back: its call was not made. */
    void release(Reservation reservation, Instant now, BudgetConfig config);

    /** The spend of the current window as this instance knows it. */
    double total(Instant now, BudgetConfig config);

    /** Whether one more call at {@code cost-per-call} cannot fit in the current window. */
    boolean full(Instant now, BudgetConfig config);

    /** The earliest instant one more call may fit. */
    Instant roomAt(Instant now, BudgetConfig config);

    /** The earliest instant calls costing {@code cost} together may fit; {@code null} if never. */
    @Nullable
    Instant roomAt(Instant now, BudgetConfig config, double cost);

    /** The limit in force: the configured one, or the fleet's. */
    double limit(BudgetConfig config);

    /**
     * Whether room can appear before {@link #roomAt} (another instance returned spend, the fleet's
     * limit was raised elsewhere), so an open budget must ask {@link #full} on every refresh.
     */
    boolean roomMayAppearEarly();

    /** The configured limit changed on this instance at run time. */
    void limitChanged(BudgetConfig oldConfig, BudgetConfig newConfig);

    /**
     * Forgets the spend of the current window (an operator's reset).
     *
     * @throws UnsupportedOperationException where the window is not this instance's to forget
     */
    void resetWindow();

    /** Gives back what is reserved and unspent (shutdown). */
    void close();
}
