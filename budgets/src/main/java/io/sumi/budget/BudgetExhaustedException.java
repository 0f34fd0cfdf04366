package io.sumi.budget;

import io.sumi.consumer.exception.Causes;
import io.sumi.consumer.exception.IdempotencyException;
import io.sumi.consumer.exception.Verdict;
import java.time.Instant;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * A call under a budget was refused before it was made: the budget is spent for the current window,
 * or its circuit breaker is open after too many failures (or is half-open and its probe call is
 * still running). Nothing was called and, for a handler bound to the budget, nothing was claimed in
 * the ledger.
 *
 * <p>Retryable: do not acknowledge the message and do not count the refusal toward dead-lettering;
 * deliver it again once the budget has room ({@link #retryAt()}). Sumi's Kafka binder pauses the
 * listener container until the breaker half-opens.
 */
public class BudgetExhaustedException extends IdempotencyException {

    /** Why the call was refused. */
    public enum Reason {

        /** The next call would exceed the budget's limit for the current window. */
        LIMIT_REACHED,

        /** The breaker is open because calls failed too often, or half-open with its probe call still running. */
        CIRCUIT_OPEN,

        /**
         * A fleet budget's shared spend store did not answer, so no spend could be reserved: the
         * budget fails closed (no paid call without a reservation) and asks the store again shortly.
         *
         * @since 0.1.0
         */
        STORE_UNAVAILABLE
    }

    private final String budget;
    private final Reason reason;
    private final double spent;
    private final double limit;
    private final @Nullable Instant retryAt;

    public BudgetExhaustedException(
            String budget, Reason reason, double spent, double limit, @Nullable Instant retryAt, String message) {
        super(message);
        this.budget = budget;
        this.reason = reason;
        this.spent = spent;
        this.limit = limit;
        this.retryAt = retryAt;
    }

    /** The name of the budget that refused the call. */
    public String budget() {
        return budget;
    }

    public Reason reason() {
        return reason;
    }

    /** What the budget had spent in its window when it refused the call. */
    public double spent() {
        return spent;
    }

    /** The budget's limit per window. */
    public double limit() {
        return limit;
    }

    /** When the breaker is due to half-open, if known. */
    public Optional<Instant> retryAt() {
        return Optional.ofNullable(retryAt);
    }

    /** {@link Verdict#BUDGET}: stop consuming until the budget can take calls, then deliver it again. */
    @Override
    public Verdict verdict() {
        return Verdict.BUDGET;
    }

    @Override
    public boolean isRetryable() {
        return true;
    }

    /** The budget exception in {@code failure}'s cause chain, if any. */
    public static Optional<BudgetExhaustedException> find(@Nullable Throwable failure) {
        return Causes.find(failure, BudgetExhaustedException.class);
    }
}
