package io.sumi.autoconfigure;

import io.sumi.budget.BudgetConfig;
import io.sumi.budget.BudgetScope;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * Budgets for paid APIs, under {@code sumi.budgets.<name>.*}. Immutable; the budgets can nonetheless
 * change at run time (see {@link BudgetConfigurationRefresher}). Pausing listeners while a budget is
 * exhausted is configured under the same root, {@code sumi.budgets.pause.*}
 * ({@link SumiBudgetPauseProperties}): {@value #PAUSE} is therefore no budget's name, and a budget
 * so named ({@code sumi.budgets.pause.limit}) fails start-up.
 *
 * @param budgets the budgets, by name (the name handlers give in {@code @IdempotentHandler(budget = ...)})
 */
@ConfigurationProperties("sumi")
public record SumiBudgetProperties(@DefaultValue Map<String, Budget> budgets) {

    /** The key under {@code sumi.budgets} that holds the pausing settings, not a budget. */
    public static final String PAUSE = "pause";

    /**
     * @throws IllegalArgumentException if a budget is named {@value #PAUSE}
     */
    public SumiBudgetProperties {
        budgets = budgetsOnly(budgets);
    }

    /**
     * {@code bound} (what {@code sumi.budgets} binds to) without the pausing settings.
     *
     * @throws IllegalArgumentException if a budget is named {@value #PAUSE}
     */
    static Map<String, Budget> budgetsOnly(Map<String, Budget> bound) {
        Budget pause = bound.get(PAUSE);
        if (pause == null) {
            return bound;
        }
        if (pause.limit() != null) {
            throw new IllegalArgumentException("sumi.budgets.pause.limit is set, but 'pause' cannot be a budget's"
                    + " name: sumi.budgets.pause.* configures the pausing of listeners (enabled,"
                    + " check-interval). Give the budget another name.");
        }
        Map<String, Budget> budgets = new LinkedHashMap<>(bound);
        budgets.remove(PAUSE);
        return Collections.unmodifiableMap(budgets);
    }

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
         * The budget these properties define, under {@code name}.
         *
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
}
