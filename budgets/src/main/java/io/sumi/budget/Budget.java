package io.sumi.budget;

import io.github.resilience4j.circuitbreaker.CircuitBreaker;
import java.time.Instant;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.function.ToDoubleFunction;

/**
 * A named spending limit per sliding time window for calls to a paid API, guarded by a
 * Resilience4j {@link CircuitBreaker}. Get one from a {@link BudgetRegistry}.
 *
 * <pre>{@code
 * Budget openai = budgets.budget("openai");
 * Completion completion = openai.call(() -> client.complete(prompt), c -> c.usage().totalTokens());
 * }</pre>
 *
 * <p>States: {@code CLOSED} (calls flow), {@code OPEN} (calls are refused with a
 * {@link BudgetExhaustedException}: the limit is reached, until enough spend has left the window;
 * or calls failed too often, for the configured wait), {@code HALF_OPEN} (probe calls decide:
 * success closes it, failure opens it again). Time-based transitions happen lazily, on the next
 * {@link #acquire()} or {@link #refresh()}, on the registry's clock. Every transition is logged once
 * and published to the registry's {@link BudgetStateListener}s.
 *
 * <p>Thread-safe: concurrent calls reserve their cost when they are permitted, so two calls can
 * never both take the last unit of a budget.
 */
public interface Budget {

    /** The budget's name ({@code stripe} for {@code sumi.budgets.stripe.*}). */
    String name();

    /** The settings in force (they can change at run time, see {@link BudgetRegistry#update}). */
    BudgetConfig config();

    /** The breaker that guards the budget. Use it for events and metrics; do not transition it by hand. */
    CircuitBreaker circuitBreaker();

    /**
     * Asks to make one call: reserves {@code cost-per-call} and takes the breaker's permission. The
     * caller must end the permit exactly once: {@link BudgetPermit#onSuccess()},
     * {@link BudgetPermit#onError(Throwable)} or, if the call was not made after all,
     * {@link BudgetPermit#release()}.
     *
     * @throws BudgetExhaustedException if the next call would exceed the limit (the breaker is then
     *     opened until enough spend has left the window) or the breaker does not permit a call
     */
    BudgetPermit acquire();

    /**
     * Asks to make calls that will cost {@code cost} together (a batch: {@code cost-per-call}
     * times its size): reserves all of it at once, or nothing. The permit's
     * {@link BudgetPermit#recordCost(double)} later replaces the reservation with what was spent.
     * Ended like {@link #acquire()}.
     *
     * @throws BudgetExhaustedException if {@code cost} does not fit in what is left of the limit
     *     (the breaker is then opened until it fits, or until one call fits if {@code cost} is
     *     more than the whole limit) or the breaker does not permit a call
     * @throws IllegalArgumentException if {@code cost} is negative or not finite
     * @since 0.1.0
     */
    BudgetPermit acquire(double cost);

    /**
     * Makes one call under the budget at {@code cost-per-call}; the call may record another cost
     * through {@link BudgetPermit#current()}.
     *
     * @throws BudgetExhaustedException if the call was refused (it was then not made)
     * @throws Exception whatever the call threw (recorded as a failure if the configuration says so)
     */
    default <T> T call(Callable<T> call) throws Exception {
        return call(call, null);
    }

    /**
     * Makes one call under the budget, whose cost is computed from its result once it returns
     * ({@code cost-per-call} is reserved meanwhile and kept if the call fails).
     *
     * @param cost the cost of a successful call, from its result; {@code null}: the reserved cost
     * @throws BudgetExhaustedException if the call was refused (it was then not made)
     * @throws Exception whatever the call threw
     */
    <T> T call(Callable<T> call, @org.jspecify.annotations.Nullable ToDoubleFunction<? super T> cost) throws Exception;

    /** The spend in the current window (including reservations of calls still running). */
    double spent();

    /** {@code limit - spent}, at least 0. */
    double remaining();

    /**
     * The breaker's state, after applying a due time-based transition ({@code OPEN} to
     * {@code HALF_OPEN} once the budget has room again or the wait after failures is over).
     */
    CircuitBreaker.State refresh();

    /** Permits acquired and not yet ended: calls running under the budget right now. */
    int callsInFlight();

    /** When an open breaker is due to half-open; empty unless open. */
    Optional<Instant> retryAt();

    /**
     * Forces the breaker open: every call is refused ({@link BudgetExhaustedException} with reason
     * {@code CIRCUIT_OPEN}, so bound listener containers pause) until {@link #forceClosed()}. No
     * time-based transition leaves this state. For an operator who must stop spending now.
     *
     * @throws UnsupportedOperationException if the budget cannot be forced
     * @since 0.1.0
     */
    default void forceOpen() {
        throw new UnsupportedOperationException(getClass().getName() + " cannot be forced open");
    }

    /**
     * Closes the breaker, from any state (a forced opening included), and forgets its failure
     * statistics: calls flow again and paused containers resume. The limit still applies: if the
     * window's spend has reached it, the next call opens the budget again. To let calls through
     * past the limit, {@link #resetWindow() reset the window} or raise the limit.
     *
     * @throws UnsupportedOperationException if the budget cannot be forced
     * @since 0.1.0
     */
    default void forceClosed() {
        throw new UnsupportedOperationException(getClass().getName() + " cannot be forced closed");
    }

    /**
     * Forgets the spend of the current window (calls still running keep nothing reserved). A budget
     * open because its limit was reached half-opens at once; one open after failures (or forced
     * open) stays so.
     *
     * @throws UnsupportedOperationException if the budget cannot be reset
     * @since 0.1.0
     */
    default void resetWindow() {
        throw new UnsupportedOperationException(getClass().getName() + " cannot reset its window");
    }

    /**
     * The time on the budget's clock (the registry's), the clock that
     * {@link BudgetExhaustedException#retryAt()} and {@link #retryAt()} are given in. A caller
     * that waits for a refusal's {@code retryAt} compares it with this, not with its own clock.
     *
     * @since 0.1.0
     */
    default Instant now() {
        return Instant.now();
    }
}
