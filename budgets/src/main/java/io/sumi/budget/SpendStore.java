package io.sumi.budget;

/**
 * Where the budgets of scope {@link BudgetScope#FLEET} keep what the whole fleet spends: one
 * counter per budget and fixed window, and the limit in force for the fleet. Sumi's implementation
 * is {@link io.sumi.budget.jdbc.JdbcSpendStore} (the ledger's database); another backend
 * (Redis, a coordination service) implements this interface.
 *
 * <p>Windows are fixed and aligned to the epoch: {@code windowStart} is a multiple of the window
 * length in milliseconds since 1970-01-01T00:00Z. <strong>The store's clock names the current
 * window</strong> ({@link #tryReserve}, {@link #readCurrent}), never an instance's: instances whose
 * clocks disagree still reserve in the same window, and old windows are forgotten relative to the
 * store's time ({@link #forgetOldWindows}), so an instance whose clock runs far ahead deletes no
 * window the others still spend in. An instance learns from each answer how long the window has
 * left ({@link Window#millisLeft()}) and measures that with its own clock as elapsed time.
 *
 * <p>Failures: any {@link RuntimeException} means the store could not answer. A budget then refuses
 * the call (fails closed: no paid call is made without a reservation).
 *
 * <p>Implementations must be thread-safe and every operation must be atomic on its own: above all
 * {@link #tryReserve}, which must check and add in one step, so that reservations of all instances
 * together never exceed the limit.
 *
 * @since 0.1.0
 */
public interface SpendStore {

    /** What a window has spent, and the fleet's limit in force. */
    record WindowState(double spent, double limit) {

        /** {@code limit - spent}, at least 0. */
        public double remaining() {
            return Math.max(0, limit - spent);
        }
    }

    /**
     * The current window by the store's clock.
     *
     * @param start the window's start, epoch milliseconds (a multiple of the window length)
     * @param millisLeft how long the window had left when the store read its clock, in milliseconds,
     *     rounded down
     */
    record Window(long start, long millisLeft) {

        /** The window of length {@code windowMillis} that holds the instant {@code nowMillis}. */
        public static Window at(long nowMillis, long windowMillis) {
            long start = Math.floorDiv(nowMillis, windowMillis) * windowMillis;
            return new Window(start, start + windowMillis - nowMillis);
        }
    }

    /**
     * The answer to {@link #tryReserve}: the window the store reserved in (or would have), and
     * whether it did.
     */
    record Grant(Window window, boolean reserved) {}

    /** The answer to {@link #readCurrent}: the current window and what it has spent. */
    record CurrentWindow(Window window, WindowState state) {}

    /**
     * Registers a budget as configured on an instance that starts, and returns the fleet's limit in
     * force. The store keeps a limit set at run time ({@link #setLimit}) while instances start with
     * the configuration it was set over; an instance configured with another limit than the last
     * one registered (a new deployment) makes its limit the fleet's.
     */
    double registerLimit(String budget, double configuredLimit);

    /** Sets the fleet's limit of a budget (a change at run time: the API or a property refresh). */
    void setLimit(String budget, double limit);

    /**
     * Adds {@code amount} to the spend of the current window (of length {@code windowMillis}, named
     * by the store's clock) if the spend then stays within the fleet's limit, atomically.
     *
     * @return the window and whether the amount was added to it
     * @since 0.1.0
     */
    Grant tryReserve(String budget, long windowMillis, double amount);

    /**
     * Adds {@code amount} to the spend of the window whatever the limit: a cost learned after the
     * call (tokens used) beyond what was reserved for it. The money is spent; the window must know.
     */
    void charge(String budget, long windowStart, double amount);

    /** Takes back {@code amount} reserved in the window and not spent. */
    void release(String budget, long windowStart, double amount);

    /** The spend of the window (0 if nothing was reserved in it) and the fleet's limit. */
    WindowState read(String budget, long windowStart);

    /**
     * The current window (of length {@code windowMillis}, named by the store's clock), its spend and
     * the fleet's limit.
     *
     * @since 0.1.0
     */
    CurrentWindow readCurrent(String budget, long windowMillis);

    /**
     * Forgets the windows of a budget that started more than {@code windowsKept} windows (of length
     * {@code windowMillis}) before the current one, by the store's clock. Optional.
     *
     * @since 0.1.0
     */
    default void forgetOldWindows(String budget, long windowMillis, int windowsKept) {}
}
