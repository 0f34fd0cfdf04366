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
 * ({@link SumiBudgetPauseProperties}), and the spend store under {@code sumi.budgets.store.*}
 * ({@link SumiBudgetStoreProperties}): {@value #PAUSE} and {@value #STORE} are therefore no
 * budget's names, and a budget so named ({@code sumi.budgets.pause.limit}) fails start-up.
 *
 * @param budgets the budgets, by name (the name handlers give in {@code @IdempotentHandler(budget = ...)})
 */
@ConfigurationProperties("sumi")
public record SumiBudgetProperties(@DefaultValue Map<String, Budget> budgets) {

    /** The key under {@code sumi.budgets} that holds the pausing settings, not a budget. */
    public static final String PAUSE = "pause";

    /** The key under {@code sumi.budgets} that holds the spend store's settings, not a budget. */
    public static final String STORE = "store";

    /**
     * @throws IllegalArgumentException if a budget is named {@value #PAUSE} or {@value #STORE}
     */
    public SumiBudgetProperties {
        budgets = budgetsOnly(budgets);
    }

    /**
     * {@code bound} (what {@code sumi.budgets} binds to) without the pausing and store settings.
     *
     * @throws IllegalArgumentException if a budget is named {@value #PAUSE} or {@value #STORE}
     */
    static Map<String, Budget> budgetsOnly(Map<String, Budget> bound) {
        if (!bound.containsKey(PAUSE) && !bound.containsKey(STORE)) {
            return bound;
        }
        Map<String, Budget> budgets = new LinkedHashMap<>(bound);
        for (String reserved : List.of(PAUSE, STORE)) {
            Budget settings = budgets.remove(reserved);
            if (settings != null && settings.limit() != null) {
                throw new IllegalArgumentException("sumi.budgets." + reserved + ".limit is set, but '" + reserved
                        + "' cannot be a budget's name: sumi.budgets." + reserved + ".* configures "
                        + (reserved.equals(PAUSE)
                                ? "the pausing of listeners (enabled, check-interval)"
                                : "the spend store (type, prefix, ...)")
                        + ". Give the budget another name.");
            }
        }
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
     *     shared spend store: the ledger's database, or Redis, see {@code sumi.budgets.store.type};
     *     the default when the application has one) or {@code instance} (this JVM alone)
     * @param chunkSize for a fleet budget, how much spend an instance reserves in the spend store at a
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
