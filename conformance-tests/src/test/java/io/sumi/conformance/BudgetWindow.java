package io.sumi.conformance;

import io.micrometer.core.instrument.MeterRegistry;
import io.sumi.budget.BudgetConfig;
import io.sumi.budget.BudgetRegistry;
import io.sumi.budget.BudgetScope;
import io.sumi.testing.MutableClock;
import java.time.Duration;

/**
 * The budgets of a kind's application and the clock their windows run on, which the budget
 * scenario moves by hand to roll the window (no sleeping, no timing). Each {@code Role#BUDGET}
 * listener has a budget of its own, named after its ledger consumer: {@value #LIMIT} calls an
 * hour, local to the JVM ({@link BudgetScope#INSTANCE}).
 *
 * <p>Not a {@code Clock} bean on purpose: the starter would give a {@code Clock} bean to the ledger
 * and the outbox too, and a clock that stands still would freeze their leases. Only the registry
 * built here ({@link #registry}, which the starter's own then backs off for) runs on it.
 */
public final class BudgetWindow {

    /** Calls each budget allows per window. */
    public static final int LIMIT = 2;

    /** Each budget's window. */
    public static final Duration WINDOW = Duration.ofHours(1);

    private final MutableClock clock = MutableClock.at("2026-03-01T10:00:00Z");

    /** Moves the budgets' clock past a whole window: every spend so far leaves it. */
    public void roll() {
        clock.advance(WINDOW.plusSeconds(1));
    }

    /** A registry with one local budget per name, on this window's clock, counting into {@code meters}. */
    public BudgetRegistry registry(MeterRegistry meters, String... budgets) {
        BudgetRegistry.Builder builder = BudgetRegistry.builder().clock(clock).meterRegistry(meters);
        for (String budget : budgets) {
            builder.budget(
                    budget,
                    BudgetConfig.custom()
                            .limit(LIMIT)
                            .window(WINDOW)
                            .costPerCall(1)
                            .scope(BudgetScope.INSTANCE)
                            .build());
        }
        return builder.build();
    }
}
