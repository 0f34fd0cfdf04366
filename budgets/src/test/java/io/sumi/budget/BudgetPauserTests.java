package io.sumi.budget;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.resilience4j.circuitbreaker.CircuitBreaker.State;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sumi.testing.MutableClock;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;

/**
 * The one pause / resume rule every binder shares, on a listener type of the test's own (a name
 * with a flag), time moved by hand: what the Kafka, Rabbit, JMS and Stream pausers only translate.
 */
class BudgetPauserTests {

    private static final Duration OPEN_WAIT = Duration.ofSeconds(30);

    private final MutableClock clock = MutableClock.at("2026-03-01T10:00:00Z");
    private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    private final BudgetRegistry budgets = BudgetRegistry.builder()
            .clock(clock)
            .meterRegistry(meters)
            .budget(
                    "stripe",
                    BudgetConfig.custom()
                            .limit(1_000)
                            .window(Duration.ofHours(1))
                            .minimumNumberOfCalls(2)
                            .slidingWindowSize(2)
                            .failureRateThreshold(50)
                            .waitDurationInOpenState(OPEN_WAIT)
                            .build())
            .build();
    private final Budget stripe = budgets.budget("stripe");

    /** Listeners are names; "stopping" ones cannot be resumed yet. */
    private final class NamePauser extends BudgetPauser<String> {
        final Set<String> pausedNow = ConcurrentHashMap.newKeySet();
        final Set<String> stopping = ConcurrentHashMap.newKeySet();
        final List<String> calls = new ArrayList<>();

        NamePauser() {
            super(budgets, Duration.ofSeconds(1), meters, "test-pauser");
        }

        @Override
        protected synchronized void pauseListener(String listener) {
            calls.add("pause " + listener);
            pausedNow.add(listener);
        }

        @Override
        protected synchronized void resumeListener(String listener) {
            calls.add("resume " + listener);
            pausedNow.remove(listener);
        }

        @Override
        protected boolean canResume(String listener) {
            return !stopping.contains(listener);
        }

        @Override
        protected String target(String listener) {
            return listener.replace("-child", "");
        }

        @Override
        protected String id(String listener) {
            return listener;
        }

        @Override
        protected String describe(String listener) {
            return "listener " + listener;
        }
    }

    private final NamePauser pauser = new NamePauser();

    private void openTheBreaker() {
        for (int i = 0; i < 2; i++) {
            assertThatThrownBy(() -> stripe.call(() -> {
                        throw new UncheckedIOException(new IOException("HTTP 502"));
                    }))
                    .isInstanceOf(UncheckedIOException.class);
        }
        assertThat(stripe.circuitBreaker().getState()).isEqualTo(State.OPEN);
    }

    private BudgetExhaustedException refusal() {
        try {
            stripe.call(() -> "never");
        } catch (BudgetExhaustedException refused) {
            return refused;
        } catch (Exception other) {
            throw new AssertionError(other);
        }
        throw new AssertionError("the open budget took a call");
    }

    @Test
    void aRefusedListenerIsPausedOnceThroughItsTargetAndResumedWhenTheBudgetHalfOpens() {
        openTheBreaker();
        BudgetExhaustedException refusal = refusal();

        pauser.pause("charges-child", refusal);
        pauser.pause("charges", refusal);
        pauser.check();

        assertThat(pauser.calls).containsExactly("pause charges");
        assertThat(pauser.isPaused("charges-child")).isTrue();

        clock.advance(OPEN_WAIT);
        pauser.check();

        assertThat(pauser.calls).containsExactly("pause charges", "resume charges");
        assertThat(pauser.isPaused("charges")).isFalse();
        assertThat(pauser.pauses("stripe")).isEqualTo(1);
        assertThat(pauser.resumes("stripe")).isEqualTo(1);
        assertThat(meters.get("sumi.budget.pauses")
                        .tag("budget", "stripe")
                        .tag("listener", "charges")
                        .counter()
                        .count())
                .isEqualTo(1);
        assertThat(meters.get("sumi.budget.resumes")
                        .tag("budget", "stripe")
                        .tag("listener", "charges")
                        .counter()
                        .count())
                .isEqualTo(1);
    }

    @Test
    void aListenerPausedForAnOpenBudgetWithoutARefusalIsResumedAtTheHalfOpeningToo() {
        openTheBreaker();

        pauser.pause("binding-in-0", "stripe");
        clock.advance(OPEN_WAIT.minusSeconds(1));
        pauser.check();
        assertThat(pauser.pausedNow).containsExactly("binding-in-0");

        clock.advance(Duration.ofSeconds(1));
        pauser.check();
        assertThat(pauser.pausedNow).isEmpty();
    }

    @Test
    void aListenerThatIsStillStoppingIsResumedByALaterCheckNotLost() {
        openTheBreaker();
        pauser.pause("queue", refusal());
        pauser.stopping.add("queue");

        clock.advance(OPEN_WAIT);
        pauser.check();
        assertThat(pauser.isPaused("queue")).isTrue();
        assertThat(pauser.calls).containsExactly("pause queue");

        pauser.stopping.remove("queue");
        pauser.check();
        assertThat(pauser.isPaused("queue")).isFalse();
        assertThat(pauser.calls).containsExactly("pause queue", "resume queue");
    }

    @Test
    void negativeControlWhileTheBudgetStaysOpenNothingIsResumed() {
        openTheBreaker();
        pauser.pause("charges", refusal());

        for (int i = 0; i < 5; i++) {
            clock.advance(Duration.ofSeconds(5));
            pauser.check();
        }

        assertThat(pauser.calls).containsExactly("pause charges");
        assertThat(pauser.resumes("stripe")).isZero();
    }
}
