package io.sumi.budget;

import java.util.Optional;

/**
 * Permission for one call under a {@link Budget}, holding the call's reserved cost until it ends.
 * End it exactly once with {@link #onSuccess()}, {@link #onError(Throwable)} or {@link #release()};
 * later calls of these are ignored.
 *
 * <p>Inside a handler bound to a budget ({@code @IdempotentHandler(budget = "openai")}) or a
 * {@link Budget#call}, the permit is current on the calling thread, so the code can record the real
 * cost of its call:
 * <pre>{@code
 * Completion completion = client.complete(prompt);
 * BudgetPermit.current().recordCost(completion.usage().totalTokens());
 * }</pre>
 *
 * <p>Thread-safe.
 */
public interface BudgetPermit {

    /** The budget this permit belongs to. */
    Budget budget();

    /**
     * Sets the cost of this call, replacing the reserved {@code cost-per-call} (tokens used, amount
     * charged). Counts at the time the call was permitted. If the budget's spend then leaves no room
     * for another call, the breaker opens at once.
     *
     * @throws IllegalArgumentException if {@code cost} is negative or not finite
     */
    void recordCost(double cost);

    /** Adds to the cost of this call, like {@link #recordCost(double)}. */
    void addCost(double cost);

    /** The cost this call counts for so far. */
    double cost();

    /** Ends the permit: the call succeeded. */
    void onSuccess();

    /** Ends the permit: the call failed with {@code failure} (a breaker failure if the configuration records it). */
    void onError(Throwable failure);

    /** Ends the permit: the call was not made; its reservation and the breaker's permission are given back. */
    void release();

    /**
     * Makes this permit current on this thread until the returned scope is closed, which restores
     * the one before. For executors and binders; callers only read it.
     */
    default Scope open() {
        return CurrentPermit.open(this);
    }

    /**
     * The permit of the budgeted call running on this thread.
     *
     * @throws IllegalStateException outside a budgeted call
     */
    static BudgetPermit current() {
        return find().orElseThrow(
                        () -> new IllegalStateException("No budgeted call is running on this thread (a permit is"
                                + " current only inside an @IdempotentHandler with a budget, or inside Budget.call)"));
    }

    /** The permit of the budgeted call running on this thread, if any. */
    static Optional<BudgetPermit> find() {
        return CurrentPermit.find();
    }

    /** Closes a permit scope opened with {@link #open()}. */
    @FunctionalInterface
    interface Scope extends AutoCloseable {
        @Override
        void close();
    }
}
