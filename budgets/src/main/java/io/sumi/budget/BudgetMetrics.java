package io.sumi.budget;

import io.github.resilience4j.circuitbreaker.CircuitBreaker;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.EnumMap;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

/** The meters of one budget, registered once when the budget is created. */
final class BudgetMetrics {

    static final String SPENT = "sumi.budget.spent";
    static final String REMAINING = "sumi.budget.remaining";
    static final String LIMIT = "sumi.budget.limit";
    static final String STATE = "sumi.budget.state";
    static final String CALLS = "sumi.budget.calls";
    static final String OPENINGS = "sumi.budget.openings";

    private final Counter permitted;
    private final Counter rejected;
    private final Map<BudgetExhaustedException.Reason, Counter> openings =
            new EnumMap<>(BudgetExhaustedException.Reason.class);

    BudgetMetrics(DefaultBudget budget, MeterRegistry registry) {
        String name = budget.name();
        Gauge.builder(SPENT, budget, DefaultBudget::spent)
                .description("Spend of the budget in its current window")
                .tag("budget", name)
                .strongReference(true)
                .register(registry);
        Gauge.builder(REMAINING, budget, DefaultBudget::remaining)
                .description("What the budget has left in its current window")
                .tag("budget", name)
                .strongReference(true)
                .register(registry);
        Gauge.builder(LIMIT, budget, DefaultBudget::limitInForce)
                .description("The budget's limit per window")
                .tag("budget", name)
                .strongReference(true)
                .register(registry);
        for (CircuitBreaker.State state : new CircuitBreaker.State[] {
            CircuitBreaker.State.CLOSED,
            CircuitBreaker.State.OPEN,
            CircuitBreaker.State.HALF_OPEN,
            // An operator's forced opening (Budget.forceOpen) must show on dashboards and alerts too.
            CircuitBreaker.State.FORCED_OPEN
        }) {
            Gauge.builder(STATE, budget, b -> b.circuitBreaker().getState() == state ? 1 : 0)
                    .description("1 for the budget breaker's current state")
                    .tag("budget", name)
                    .tag("state", state.name().toLowerCase(Locale.ROOT))
                    .strongReference(true)
                    .register(registry);
        }
        permitted = Counter.builder(CALLS)
                .description("Calls asked of the budget, by result")
                .tag("budget", name)
                .tag("result", "permitted")
                .register(registry);
        rejected = Counter.builder(CALLS)
                .description("Calls asked of the budget, by result")
                .tag("budget", name)
                .tag("result", "rejected")
                .register(registry);
        for (BudgetExhaustedException.Reason reason : BudgetExhaustedException.Reason.values()) {
            openings.put(
                    reason,
                    Counter.builder(OPENINGS)
                            .description("Times the budget's breaker opened, by reason")
                            .tag("budget", name)
                            .tag("reason", reason.name().toLowerCase(Locale.ROOT))
                            .register(registry));
        }
    }

    void permitted() {
        permitted.increment();
    }

    void rejected() {
        rejected.increment();
    }

    void opened(BudgetExhaustedException.Reason reason) {
        // The constructor registered a counter for every reason.
        Objects.requireNonNull(openings.get(reason)).increment();
    }
}
