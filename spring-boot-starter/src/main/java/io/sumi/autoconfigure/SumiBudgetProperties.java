package io.sumi.autoconfigure;

import io.sumi.budget.BudgetConfig;
import io.sumi.budget.BudgetScope;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * Budgets for paid APIs, under {@code sumi.budgets.<name>.*}, and how the Kafka binder pauses
 * listener containers while one is exhausted ({@code sumi.budget-pause.*}). Immutable; the budgets
 * can nonetheless change at run time (see {@link BudgetConfigurationRefresher}).
 *
 * @param budgets the budgets, by name (the name handlers give in {@code @IdempotentHandler(budget = ...)})
 * @param budgetPause pausing of Kafka listener containers bound to an exhausted budget
 */
@ConfigurationProperties("sumi")
public record SumiBudgetProperties(
        @DefaultValue Map<String, Budget> budgets,
        @DefaultValue BudgetPause budgetPause) {

    /**
     * One budget.
     *
     * @param limit the spend allowed per window (required; calls, cents, tokens: whatever the costs count)
     * @param window how long a call's cost counts (scope instance: a sliding window; scope fleet:
     *     fixed windows aligned to the epoch)
     * @param costPerCall what each call reserves when it is permitted (a handler may record the real cost after the call)
     * @param failureRateThreshold the failure rate, in percent, at which the breaker also opens
     * @param slidingWindowSize how many recent calls the failure rate is computed over
     * @param minimumNumberOfCalls how many calls are needed before the failure rate counts
     * @param waitDurationInOpenState how long the breaker stays open after too many failures
     * @param permittedCallsInHalfOpenState how many probe calls decide whether a half-open breaker closes
     * @param ignoreExceptions exceptions that are answers, not failures of the provider (a declined
     *     card): they never open the breaker
     * @param scope whose spending the limit caps: {@code fleet} (all instances together, in the
     *     ledger's database; the default when the application has a DataSource) or {@code instance}
     *     (this JVM alone)
     * @param chunkSize for a fleet budget, how much spend an instance reserves in the database at a
     *     time (default: 1 % of the limit, at least {@code cost-per-call}); an instance that dies
     *     leaves at most this much unspent in its window
     */
    public record Budget(
            @Nullable Double limit,
            @DefaultValue("1h") Duration window,
            @DefaultValue("1") double costPerCall,
            @DefaultValue("50") float failureRateThreshold,
            @DefaultValue("20") int slidingWindowSize,
            @DefaultValue("10") int minimumNumberOfCalls,
            @DefaultValue("30s") Duration waitDurationInOpenState,
            @DefaultValue("1") int permittedCallsInHalfOpenState,
            @DefaultValue List<Class<? extends Throwable>> ignoreExceptions,
            @Nullable BudgetScope scope,
            @Nullable Double chunkSize) {

        /**
         * @throws IllegalArgumentException naming the budget if a setting is missing or invalid
         */
        public BudgetConfig toConfig(String name) {
            if (limit == null) {
                throw new IllegalArgumentException("sumi.budgets." + name + ".limit is required");
            }
            List<Class<? extends Throwable>> ignored = List.copyOf(ignoreExceptions);
            try {
                return BudgetConfig.custom()
                        .limit(limit)
                        .window(window)
                        .costPerCall(costPerCall)
                        .failureRateThreshold(failureRateThreshold)
                        .slidingWindowSize(slidingWindowSize)
                        .minimumNumberOfCalls(minimumNumberOfCalls)
                        .waitDurationInOpenState(waitDurationInOpenState)
                        .permittedCallsInHalfOpenState(permittedCallsInHalfOpenState)
                        .scope(scope)
                        .chunkSize(chunkSize == null ? Double.NaN : chunkSize)
                        .recordFailure(failure -> ignored.stream().noneMatch(type -> type.isInstance(failure)))
                        .build();
            } catch (IllegalArgumentException ex) {
                throw new IllegalArgumentException("Invalid sumi.budgets." + name + ": " + ex.getMessage(), ex);
            }
        }
    }

    /**
     * Pausing of Kafka listener containers bound to an exhausted budget.
     *
     * @param enabled whether containers are paused (else budget refusals are retried by the error handler, never dead-lettered)
     * @param checkInterval how often paused containers check whether their budget half-opened
     */
    public record BudgetPause(
            @DefaultValue("true") boolean enabled,
            @DefaultValue("1s") Duration checkInterval) {}
}
