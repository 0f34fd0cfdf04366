package io.sumi.consumer.binder;

import org.jspecify.annotations.Nullable;

/**
 * Pauses (or stops) a listener container while what refused its message stops consumption as a
 * whole ({@link io.sumi.consumer.exception.Verdict#BUDGET}), and resumes it once that can take
 * messages again. sumi-budgets' pausers ({@code io.sumi.budget.BudgetPauser} and the binders'
 * subclasses of it) implement it; a binder's listener code names only this type, so it runs without
 * sumi-budgets on the class path.
 *
 * @param <L> the binder's listener container
 * @since 0.1.0
 */
public interface ListenerPauser<L> {

    /**
     * Pauses {@code listener} for the refusal in {@code failure}'s cause chain, if there is one this
     * pauser handles.
     *
     * @return whether there was such a refusal (and the listener is paused, or about to be)
     */
    boolean pauseFor(L listener, @Nullable Throwable failure);

    /** Whether this pauser holds {@code listener} paused now. */
    boolean isPaused(L listener);
}
