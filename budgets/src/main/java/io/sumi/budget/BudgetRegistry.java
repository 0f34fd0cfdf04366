package io.sumi.budget;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import io.sumi.consumer.IdempotentExecutor;
import java.time.Clock;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * The budgets of an application, by name. Budgets are created from configuration and can be
 * reconfigured at run time ({@link #update}), keeping what they have spent.
 *
 * <p>Metrics (Micrometer, tag {@code budget}): gauges {@code sumi.budget.spent},
 * {@code sumi.budget.remaining}, {@code sumi.budget.limit}, {@code sumi.budget.state} (1 for the
 * current state, tag {@code state} = {@code closed}, {@code open}, {@code half_open}); counters
 * {@code sumi.budget.calls} (tag {@code result} = {@code permitted} or {@code rejected}) and
 * {@code sumi.budget.openings} (tag {@code reason} = {@code limit_reached} or {@code circuit_open}).
 *
 * <p>Thread-safe.
 */
public interface BudgetRegistry extends IdempotentExecutor.Decorator {

    /**
     * The budget called {@code name}.
     *
     * @throws IllegalArgumentException if there is none
     */
    Budget budget(String name);

    /** The budget called {@code name}, if any. */
    Optional<Budget> find(String name);

    /** The names of all budgets. */
    Set<String> names();

    /**
     * Creates the budget {@code name}, or reconfigures the existing one in place: the spend of its
     * window is kept and judged against the new limit and window at once (an open budget that now
     * has room half-opens; a closed one that has none opens). Breaker settings (failure rate,
     * waits) apply from the breaker's next state change.
     *
     * @return the budget
     */
    Budget update(String name, BudgetConfig config);

    /** Applies due time-based transitions of every budget (see {@link Budget#refresh()}). */
    void refreshAll();

    /** Registers a listener for the state transitions of every budget, present and future. */
    void addListener(BudgetStateListener listener);

    /**
     * Gives back to the shared store what the {@link BudgetScope#FLEET fleet} budgets of this
     * instance reserved and did not spend (call it on shutdown; Spring does). Budgets keep working.
     *
     * @since 0.1.0
     */
    default void close() {}

    /**
     * An executor that runs handlers bound to a budget ({@code @IdempotentHandler(budget = ...)})
     * under it: before the ledger is touched, the budget must permit the call (else a
     * {@link BudgetExhaustedException} is thrown and nothing is claimed); a handler run is one call,
     * its success or exception ends the permit; a duplicate costs nothing. Other handlers run as
     * {@code executor} runs them. Pass the registry to {@link IdempotentExecutor.Builder#decorator}
     * to build an executor so decorated.
     */
    @Override
    default IdempotentExecutor decorate(IdempotentExecutor executor) {
        return executor instanceof BudgetedIdempotentExecutor budgeted && budgeted.budgets() == this
                ? executor
                : new BudgetedIdempotentExecutor(executor, this);
    }

    /** Starts a builder. */
    static Builder builder() {
        return new Builder();
    }

    /** A registry of {@code budgets} on the system clock, without metrics. */
    static BudgetRegistry of(Map<String, BudgetConfig> budgets) {
        Builder builder = builder();
        budgets.forEach(builder::budget);
        return builder.build();
    }

    /** Builds a {@link BudgetRegistry}. */
    final class Builder {

        private final Map<String, BudgetConfig> budgets = new LinkedHashMap<>();
        private Clock clock = Clock.systemUTC();
        private MeterRegistry meterRegistry = new CompositeMeterRegistry();
        private @Nullable SpendStore spendStore;

        private Builder() {}

        /** Adds a budget. */
        public Builder budget(String name, BudgetConfig config) {
            budgets.put(Objects.requireNonNull(name, "name"), Objects.requireNonNull(config, "config"));
            return this;
        }

        /** The clock windows and waits are measured on; the system clock by default. */
        public Builder clock(Clock clock) {
            this.clock = Objects.requireNonNull(clock, "clock");
            return this;
        }

        /** Where the gauges and counters go; none by default. */
        public Builder meterRegistry(MeterRegistry meterRegistry) {
            this.meterRegistry = Objects.requireNonNull(meterRegistry, "meterRegistry");
            return this;
        }

        /**
         * The shared store of the {@link BudgetScope#FLEET fleet} budgets; with one, a budget whose
         * scope is not set is a fleet budget. None by default: every budget is an instance budget.
         *
         * @since 0.1.0
         */
        public Builder spendStore(@Nullable SpendStore spendStore) {
            this.spendStore = spendStore;
            return this;
        }

        public BudgetRegistry build() {
            DefaultBudgetRegistry registry = new DefaultBudgetRegistry(clock, meterRegistry, spendStore);
            budgets.forEach(registry::update);
            return registry;
        }
    }
}
