package io.sumi.budget;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.resilience4j.circuitbreaker.CircuitBreaker.State;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sumi.testing.MutableClock;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * What an operator does to a budget (the Actuator endpoint calls these): force it open, force it
 * closed, reset its window. Time moves by hand.
 */
class BudgetOperatorControlTests {

    final MutableClock clock = MutableClock.at("2026-03-01T10:00:00Z");
    final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    final List<String> transitions = new CopyOnWriteArrayList<>();
    final AtomicInteger calls = new AtomicInteger();

    Budget budget(BudgetConfig config) {
        BudgetRegistry registry = BudgetRegistry.builder()
                .clock(clock)
                .meterRegistry(meters)
                .budget("stripe", config)
                .build();
        registry.addListener((budget, from, to) -> transitions.add(from + "->" + to));
        return registry.budget("stripe");
    }

    @AfterEach
    void closeMeters() {
        meters.close();
    }

    @Test
    void aForcedOpenBudgetRefusesEveryCallWhateverTheTimeUntilForcedClosed() throws Exception {
        Budget stripe = budget(BudgetConfig.of(100, Duration.ofHours(1)));

        stripe.forceOpen();
        clock.advance(Duration.ofDays(1));

        assertThat(stripe.refresh()).isEqualTo(State.FORCED_OPEN);
        assertThatThrownBy(() -> stripe.call(calls::incrementAndGet))
                .isInstanceOfSatisfying(
                        BudgetExhaustedException.class,
                        ex -> assertThat(ex.reason()).isEqualTo(BudgetExhaustedException.Reason.CIRCUIT_OPEN));
        assertThat(calls).hasValue(0);
        assertThat(meters.get("sumi.budget.state")
                        .tag("budget", "stripe")
                        .tag("state", "forced_open")
                        .gauge()
                        .value())
                .isEqualTo(1);

        stripe.forceClosed();

        assertThat(stripe.call(calls::incrementAndGet)).isEqualTo(1);
        assertThat(transitions).containsExactly("CLOSED->FORCED_OPEN", "FORCED_OPEN->CLOSED");
    }

    @Test
    void forcingClosedAnExhaustedBudgetKeepsTheLimit() throws Exception {
        Budget stripe = budget(BudgetConfig.of(2, Duration.ofHours(1)));
        stripe.call(calls::incrementAndGet);
        stripe.call(calls::incrementAndGet);
        assertThat(stripe.refresh()).isEqualTo(State.OPEN);

        stripe.forceClosed();

        // Closed, but the window is still full: the budget opens again at once.
        assertThat(stripe.refresh()).isEqualTo(State.OPEN);
        assertThatThrownBy(() -> stripe.call(calls::incrementAndGet)).isInstanceOf(BudgetExhaustedException.class);
        assertThat(calls).hasValue(2);
    }

    @Test
    void resettingTheWindowHalfOpensABudgetExhaustedByItsLimit() throws Exception {
        Budget stripe = budget(BudgetConfig.of(2, Duration.ofHours(1)));
        stripe.call(calls::incrementAndGet);
        stripe.call(calls::incrementAndGet);
        assertThat(stripe.refresh()).isEqualTo(State.OPEN);

        stripe.resetWindow();

        assertThat(stripe.spent()).isZero();
        assertThat(stripe.remaining()).isEqualTo(2);
        assertThat(stripe.refresh()).isEqualTo(State.HALF_OPEN);
        assertThat(stripe.call(calls::incrementAndGet)).isEqualTo(3);
        assertThat(stripe.refresh()).isEqualTo(State.CLOSED);
    }

    @Test
    void resettingTheWindowLeavesAForcedOpeningInPlace() {
        Budget stripe = budget(BudgetConfig.of(2, Duration.ofHours(1)));
        stripe.forceOpen();

        stripe.resetWindow();

        assertThat(stripe.refresh()).isEqualTo(State.FORCED_OPEN);
    }
}
