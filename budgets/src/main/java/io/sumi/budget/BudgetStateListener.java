package io.sumi.budget;

import io.github.resilience4j.circuitbreaker.CircuitBreaker;

/**
 * Told about every state transition of every budget of a {@link BudgetRegistry}, on the thread that
 * caused it (a caller of {@link Budget#acquire()}, of a permit, or of {@link Budget#refresh()}).
 * Implementations must be quick and must not call back into the budget's permits.
 */
@FunctionalInterface
public interface BudgetStateListener {

    void onStateTransition(Budget budget, CircuitBreaker.State from, CircuitBreaker.State to);
}
