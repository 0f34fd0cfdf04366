package io.sumi.budget;

import java.time.Instant;
import org.jspecify.annotations.Nullable;

/**
 * Where a budget's spend is counted: in this JVM ({@link LocalSpendAccount}, a sliding window) or
 * in a shared store for the whole fleet ({@link FleetSpendAccount}, fixed windows, chunks).
 *
 * <p>Concurrency: every method is called under the owning budget's lock, except {@link #fetch},
 * {@link #refreshFromStore} and {@link #flush}, the only ones that may make a round trip to a
 * store: the budget calls them without its lock, so that a call the account can serve locally is
 * never held up by another call's round trip. An account with such methods guards its own state.
 */
interface SpendAccount {

    /** The cost one permitted call counts for; changed through the account only. */
    interface Reservation {
        double cost();
    }

    /** What {@link #tryReserve} found: a reservation, a refusal, or that the store must be asked first. */
    record Attempt(@Nullable Reservation reservation, boolean askStore) {

        static final Attempt REFUSED = new Attempt(null, false);
        static final Attempt ASK_STORE = new Attempt(null, true);

        static Attempt granted(Reservation reservation) {
            return new Attempt(reservation, false);
        }
    }

    /**
     * Reserves {@code cost} if it fits in what this instance holds, without a round trip.
     *
     * @return the reservation; {@link Attempt#REFUSED} if it does not fit; {@link Attempt#ASK_STORE}
     *     if only the store can tell (then {@link #fetch}, without the budget's lock, and try again)
     */
    Attempt tryReserve(Instant now, double cost, BudgetConfig config);

    /**
     * Asks the store for room for {@code cost} (a round trip; called without the budget's lock).
     *
     * @return whether this instance now holds room for it (another thread may still take it first);
     *     {@code false} if it does not fit in the window
     * @throws SpendStoreUnavailableException if the shared store could not answer (fail closed)
     */
    default boolean fetch(double cost, BudgetConfig config) {
        throw new UnsupportedOperationException("only a shared account asks a store");
    }

    /** Asks the store again whether room appeared, if it is time to (without the budget's lock). */
    default void refreshFromStore(BudgetConfig config) {}

    /** Sends what {@link #setCost} left to send to the store (without the budget's lock). */
    default void flush() {}

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
