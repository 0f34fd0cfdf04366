package io.sumi.budget;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.resilience4j.circuitbreaker.CircuitBreaker.State;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sumi.testing.MutableClock;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A budget on its own: spend in a sliding window, the breaker it opens, half-opens and closes, the
 * cost recorded after a call, failure-rate opening, run-time reconfiguration and its meters. Time
 * moves by hand.
 */
class BudgetTests {

    final MutableClock clock = MutableClock.at("2026-03-01T10:00:00Z");
    final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    final List<String> transitions = new CopyOnWriteArrayList<>();

    BudgetRegistry registry(String name, BudgetConfig config) {
        BudgetRegistry registry = BudgetRegistry.builder()
                .clock(clock)
                .meterRegistry(meters)
                .budget(name, config)
                .build();
        registry.addListener((budget, from, to) -> transitions.add(budget.name() + ":" + from + "->" + to));
        return registry;
    }

    @AfterEach
    void closeMeters() {
        meters.close();
    }

    @Test
    void theCallAfterTheLimitFailsFastWithTheBudgetExceptionAndOpensTheBreaker() throws Exception {
        Budget stripe =
                registry("stripe", BudgetConfig.of(3, Duration.ofHours(1))).budget("stripe");
        AtomicInteger calls = new AtomicInteger();
        Instant first = clock.instant();
        for (int i = 0; i < 3; i++) {
            stripe.call(calls::incrementAndGet);
            clock.advance(Duration.ofMinutes(1));
        }

        assertThatThrownBy(() -> stripe.call(calls::incrementAndGet))
                .isInstanceOfSatisfying(BudgetExhaustedException.class, ex -> {
                    assertThat(ex.budget()).isEqualTo("stripe");
                    assertThat(ex.reason()).isEqualTo(BudgetExhaustedException.Reason.LIMIT_REACHED);
                    assertThat(ex.spent()).isEqualTo(3);
                    assertThat(ex.limit()).isEqualTo(3);
                    assertThat(ex.isRetryable()).isTrue();
                    // The oldest call leaves the window an hour after it was made.
                    assertThat(ex.retryAt()).contains(first.plus(Duration.ofHours(1)));
                });
        assertThat(calls).hasValue(3);
        assertThat(stripe.circuitBreaker().getState()).isEqualTo(State.OPEN);
        // The breaker opened when the third call used the last unit, not only when the fourth asked.
        assertThat(transitions).containsExactly("stripe:CLOSED->OPEN");
        assertThat(meters.get("sumi.budget.openings")
                        .tag("budget", "stripe")
                        .tag("reason", "limit_reached")
                        .counter()
                        .count())
                .isEqualTo(1);
        assertThat(meters.get("sumi.budget.calls")
                        .tag("budget", "stripe")
                        .tag("result", "rejected")
                        .counter()
                        .count())
                .isEqualTo(1);
    }

    @Test
    void whenTheWindowRollsTheBreakerHalfOpensAndASuccessfulProbeClosesIt() throws Exception {
        Budget stripe =
                registry("stripe", BudgetConfig.of(2, Duration.ofHours(1))).budget("stripe");
        stripe.call(() -> "a");
        clock.advance(Duration.ofMinutes(10));
        stripe.call(() -> "b");
        assertThat(stripe.refresh()).isEqualTo(State.OPEN);
        assertThat(stripe.retryAt()).contains(Instant.parse("2026-03-01T11:00:00Z"));

        clock.advance(Duration.ofMinutes(49));
        assertThat(stripe.refresh()).isEqualTo(State.OPEN);
        clock.advance(Duration.ofMinutes(11));
        assertThat(stripe.refresh()).isEqualTo(State.HALF_OPEN);
        assertThat(stripe.spent()).isZero();

        // One probe at a time: a second caller is refused while the probe runs, although budget is left.
        BudgetPermit probe = stripe.acquire();
        assertThatThrownBy(stripe::acquire)
                .isInstanceOfSatisfying(
                        BudgetExhaustedException.class,
                        ex -> assertThat(ex.reason()).isEqualTo(BudgetExhaustedException.Reason.CIRCUIT_OPEN));
        probe.onSuccess();

        assertThat(stripe.circuitBreaker().getState()).isEqualTo(State.CLOSED);
        assertThat(transitions)
                .containsExactly("stripe:CLOSED->OPEN", "stripe:OPEN->HALF_OPEN", "stripe:HALF_OPEN->CLOSED");
        assertThat(stripe.call(() -> "c")).isEqualTo("c");
        assertThat(stripe.circuitBreaker().getState()).isEqualTo(State.OPEN);
    }

    @Test
    void aProbeThatFailsOpensTheBreakerAgain() throws Exception {
        Budget stripe = registry(
                        "stripe",
                        BudgetConfig.custom()
                                .limit(1)
                                .window(Duration.ofMinutes(1))
                                .build())
                .budget("stripe");
        stripe.call(() -> "a");
        clock.advance(Duration.ofMinutes(1));
        assertThat(stripe.refresh()).isEqualTo(State.HALF_OPEN);

        assertThatThrownBy(() -> stripe.call(() -> {
                    throw new IllegalStateException("provider answered 503");
                }))
                .hasMessage("provider answered 503");

        assertThat(stripe.circuitBreaker().getState()).isEqualTo(State.OPEN);
    }

    @Test
    void aVariableCostRecordedAfterTheCallIsHonoured() throws Exception {
        // An LLM budget: 10,000 tokens an hour; a call reserves 1,000 until its usage is known.
        Budget openai = registry(
                        "openai",
                        BudgetConfig.custom()
                                .limit(10_000)
                                .window(Duration.ofHours(1))
                                .costPerCall(1_000)
                                .build())
                .budget("openai");

        openai.call(() -> 4_000, tokens -> tokens);
        assertThat(openai.spent()).isEqualTo(4_000);
        openai.call(() -> {
            BudgetPermit.current().recordCost(2_500);
            return "answer";
        });
        assertThat(openai.spent()).isEqualTo(6_500);
        assertThat(openai.remaining()).isEqualTo(3_500);

        // A permit reserves cost-per-call while the call runs.
        BudgetPermit running = openai.acquire();
        assertThat(openai.spent()).isEqualTo(7_500);
        running.recordCost(3_000);
        running.onSuccess();
        assertThat(openai.spent()).isEqualTo(9_500);

        // 9,500 + 1,000 would exceed 10,000: the next call is refused and never made.
        AtomicInteger made = new AtomicInteger();
        assertThatThrownBy(() -> openai.call(made::incrementAndGet)).isInstanceOf(BudgetExhaustedException.class);
        assertThat(made).hasValue(0);
        assertThat(openai.circuitBreaker().getState()).isEqualTo(State.OPEN);
    }

    @Test
    void aReleasedPermitCostsNothing() {
        Budget budget = registry("b", BudgetConfig.of(1, Duration.ofHours(1))).budget("b");

        budget.acquire().release();

        assertThat(budget.spent()).isZero();
        BudgetPermit permit = budget.acquire();
        permit.onSuccess();
        permit.release(); // ignored: the permit has ended
        assertThat(budget.spent()).isEqualTo(1);
    }

    @Test
    void failuresOpenTheBreakerWhileBudgetIsLeft() throws Exception {
        BudgetConfig config = BudgetConfig.custom()
                .limit(1_000)
                .window(Duration.ofHours(1))
                .minimumNumberOfCalls(4)
                .slidingWindowSize(4)
                .failureRateThreshold(50)
                .waitDurationInOpenState(Duration.ofSeconds(30))
                .build();
        Budget stripe = registry("stripe", config).budget("stripe");
        stripe.call(() -> "ok");
        stripe.call(() -> "ok");
        for (int i = 0; i < 2; i++) {
            assertThatThrownBy(() -> stripe.call(() -> {
                        throw new UncheckedIOException("HTTP 502", new java.io.IOException("502"));
                    }))
                    .isInstanceOf(UncheckedIOException.class);
        }

        assertThat(stripe.circuitBreaker().getState()).isEqualTo(State.OPEN);
        assertThatThrownBy(() -> stripe.call(() -> "not made"))
                .isInstanceOfSatisfying(BudgetExhaustedException.class, ex -> {
                    assertThat(ex.reason()).isEqualTo(BudgetExhaustedException.Reason.CIRCUIT_OPEN);
                    assertThat(ex.retryAt()).contains(clock.instant().plusSeconds(30));
                });
        assertThat(meters.get("sumi.budget.openings")
                        .tag("budget", "stripe")
                        .tag("reason", "circuit_open")
                        .counter()
                        .count())
                .isEqualTo(1);

        clock.advance(Duration.ofSeconds(30));
        assertThat(stripe.call(() -> "probe")).isEqualTo("probe");
        assertThat(stripe.circuitBreaker().getState()).isEqualTo(State.CLOSED);
    }

    @Test
    void exceptionsTheConfigurationDoesNotRecordAreNoFailures() throws Exception {
        BudgetConfig config = BudgetConfig.custom()
                .limit(1_000)
                .minimumNumberOfCalls(2)
                .slidingWindowSize(2)
                .recordFailure(failure -> !(failure instanceof IllegalArgumentException))
                .build();
        Budget stripe = registry("stripe", config).budget("stripe");
        for (int i = 0; i < 5; i++) {
            assertThatThrownBy(() -> stripe.call(() -> {
                        throw new IllegalArgumentException("card declined");
                    }))
                    .isInstanceOf(IllegalArgumentException.class);
        }
        assertThat(stripe.circuitBreaker().getState()).isEqualTo(State.CLOSED);
        assertThat(stripe.spent()).isEqualTo(5);
    }

    @Test
    void raisingTheLimitAtRunTimeHalfOpensAnExhaustedBudgetAndLoweringItOpensOne() throws Exception {
        BudgetRegistry registry = registry("stripe", BudgetConfig.of(2, Duration.ofHours(1)));
        Budget stripe = registry.budget("stripe");
        stripe.call(() -> "a");
        stripe.call(() -> "b");
        assertThat(stripe.circuitBreaker().getState()).isEqualTo(State.OPEN);

        Budget same = registry.update("stripe", BudgetConfig.of(5, Duration.ofHours(1)));

        assertThat(same).isSameAs(stripe);
        assertThat(stripe.circuitBreaker().getState()).isEqualTo(State.HALF_OPEN);
        assertThat(stripe.spent()).isEqualTo(2);
        stripe.call(() -> "c");
        assertThat(stripe.circuitBreaker().getState()).isEqualTo(State.CLOSED);

        registry.update("stripe", BudgetConfig.of(3, Duration.ofHours(1)));
        assertThat(stripe.circuitBreaker().getState()).isEqualTo(State.OPEN);
        assertThat(meters.get("sumi.budget.limit")
                        .tag("budget", "stripe")
                        .gauge()
                        .value())
                .isEqualTo(3);
    }

    @Test
    void gaugesShowSpendRemainingAndState() throws Exception {
        Budget stripe =
                registry("stripe", BudgetConfig.of(4, Duration.ofHours(1))).budget("stripe");
        stripe.call(() -> "a");

        assertThat(meters.get("sumi.budget.spent")
                        .tag("budget", "stripe")
                        .gauge()
                        .value())
                .isEqualTo(1);
        assertThat(meters.get("sumi.budget.remaining")
                        .tag("budget", "stripe")
                        .gauge()
                        .value())
                .isEqualTo(3);
        assertThat(meters.get("sumi.budget.state")
                        .tag("budget", "stripe")
                        .tag("state", "closed")
                        .gauge()
                        .value())
                .isEqualTo(1);
        assertThat(meters.get("sumi.budget.state")
                        .tag("budget", "stripe")
                        .tag("state", "open")
                        .gauge()
                        .value())
                .isZero();

        clock.advance(Duration.ofHours(1));
        assertThat(meters.get("sumi.budget.spent")
                        .tag("budget", "stripe")
                        .gauge()
                        .value())
                .isZero();
    }

    @Test
    void concurrentCallersNeverSpendMoreThanTheLimit() throws Exception {
        Budget budget = registry("b", BudgetConfig.of(50, Duration.ofHours(1))).budget("b");
        int threads = 8;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        CountDownLatch start = new CountDownLatch(1);
        AtomicInteger made = new AtomicInteger();
        List<Future<Integer>> futures = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            futures.add(pool.submit(() -> {
                start.await();
                int refused = 0;
                for (int i = 0; i < 20; i++) {
                    try {
                        budget.call(made::incrementAndGet);
                    } catch (BudgetExhaustedException ex) {
                        refused++;
                    }
                }
                return refused;
            }));
        }
        start.countDown();
        int refused = 0;
        for (Future<Integer> future : futures) {
            refused += future.get(30, TimeUnit.SECONDS);
        }
        pool.shutdown();

        assertThat(made).hasValue(50);
        assertThat(refused).isEqualTo(threads * 20 - 50);
        assertThat(budget.spent()).isEqualTo(50);
    }

    @Test
    void invalidConfigurationsAreRejected() {
        assertThatThrownBy(() -> BudgetConfig.custom().build()).hasMessageContaining("positive, finite limit");
        assertThatThrownBy(() -> BudgetConfig.custom().limit(5).costPerCall(6).build())
                .hasMessageContaining("cost per call");
        assertThatThrownBy(() ->
                        BudgetConfig.custom().limit(5).window(Duration.ZERO).build())
                .hasMessageContaining("window");
        assertThatThrownBy(() ->
                        registry("x", BudgetConfig.of(1, Duration.ofHours(1))).budget("y"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("sumi.budgets.y.limit");
        assertThatThrownBy(BudgetPermit::current).isInstanceOf(IllegalStateException.class);
    }
}
