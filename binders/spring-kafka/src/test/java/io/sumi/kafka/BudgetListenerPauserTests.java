package io.sumi.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.github.resilience4j.circuitbreaker.CircuitBreaker.State;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sumi.budget.Budget;
import io.sumi.budget.BudgetConfig;
import io.sumi.budget.BudgetExhaustedException;
import io.sumi.budget.BudgetPermit;
import io.sumi.budget.BudgetRegistry;
import io.sumi.testing.MutableClock;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.springframework.kafka.core.DefaultKafkaConsumerFactory;
import org.springframework.kafka.listener.ContainerProperties;
import org.springframework.kafka.listener.KafkaMessageListenerContainer;

/**
 * When the pauser resumes a container it paused, with time moved by hand and containers that are
 * never started (a pause or resume only flips their request flag): at the half-opening of the
 * budget's breaker; but a container paused while the breaker was already half-open (its probe
 * running elsewhere) waits for the probe's verdict, the next half-opening, or the probe given back.
 */
class BudgetListenerPauserTests {

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
    private final BudgetListenerPauser pauser = new BudgetListenerPauser(
            budgets,
            (org.springframework.kafka.listener.ListenerContainerRegistry) null,
            Duration.ofSeconds(1),
            meters);
    private final KafkaMessageListenerContainer<String, String> container = container("charges");

    private static KafkaMessageListenerContainer<String, String> container(String id) {
        KafkaMessageListenerContainer<String, String> container = new KafkaMessageListenerContainer<>(
                new DefaultKafkaConsumerFactory<>(Map.of()), new ContainerProperties("payment.charge"));
        container.setBeanName(id);
        return container;
    }

    private void openTheBreaker() {
        for (int i = 0; i < 2; i++) {
            assertThatThrownBy(() -> stripe.call(() -> {
                        throw new UncheckedIOException(new IOException("HTTP 502"));
                    }))
                    .isInstanceOf(UncheckedIOException.class);
        }
        assertThat(stripe.circuitBreaker().getState()).isEqualTo(State.OPEN);
    }

    private void halfOpen() {
        clock.advance(OPEN_WAIT);
        assertThat(stripe.refresh()).isEqualTo(State.HALF_OPEN);
    }

    /** Opens the breaker, lets it half-open, starts the probe (as another container would) and pauses our container. */
    private BudgetPermit pauseWhileAnotherContainerRunsTheProbe() {
        openTheBreaker();
        halfOpen();
        BudgetPermit probe = stripe.acquire();
        pauser.pause(container, refusal());
        return probe;
    }

    private static void failed(BudgetPermit probe) {
        probe.onError(new UncheckedIOException(new IOException("HTTP 502")));
        probe.release();
    }

    private static BudgetExhaustedException refusal() {
        return new BudgetExhaustedException(
                "stripe", BudgetExhaustedException.Reason.CIRCUIT_OPEN, 0, 1_000, null, "breaker open");
    }

    @Test
    void aContainerPausedWhileTheBreakerIsOpenResumesWhenItHalfOpens() {
        openTheBreaker();
        pauser.pause(container, refusal());
        assertThat(container.isPauseRequested()).isTrue();
        assertThat(pauser.isPaused(container)).isTrue();

        pauser.check();
        assertThat(container.isPauseRequested()).as("still open").isTrue();

        clock.advance(OPEN_WAIT);
        pauser.check();
        assertThat(container.isPauseRequested()).isFalse();
        assertThat(pauser.isPaused(container)).isFalse();
        assertThat(pauser.pauses("stripe")).isEqualTo(1);
        assertThat(pauser.resumes("stripe")).isEqualTo(1);
        assertThat(meters.get("sumi.budget.resumes")
                        .tag("budget", "stripe")
                        .counter()
                        .count())
                .isEqualTo(1);
    }

    @Test
    void aContainerPausedWhileAnotherRunsTheProbeWaitsForTheProbeToCloseTheBreaker() {
        BudgetPermit probe = pauseWhileAnotherContainerRunsTheProbe();

        pauser.check();
        assertThat(container.isPauseRequested())
                .as("the probe is still running elsewhere")
                .isTrue();

        probe.onSuccess();
        probe.release();
        assertThat(stripe.circuitBreaker().getState()).isEqualTo(State.CLOSED);
        assertThat(container.isPauseRequested())
                .as("resumed by the transition to CLOSED")
                .isFalse();
    }

    @Test
    void aContainerPausedWhileAnotherRunsTheProbeResumesAtTheNextHalfOpeningWhenTheProbeFails() {
        BudgetPermit probe = pauseWhileAnotherContainerRunsTheProbe();

        failed(probe);
        assertThat(stripe.circuitBreaker().getState()).isEqualTo(State.OPEN);
        pauser.check();
        assertThat(container.isPauseRequested()).as("open again").isTrue();

        clock.advance(OPEN_WAIT);
        pauser.check();
        assertThat(container.isPauseRequested())
                .as("half-opened again: this container may probe")
                .isFalse();
    }

    @Test
    void theNextHalfOpeningResumesAContainerPausedDuringAFailedProbeEvenWhileOtherCallsAreStillRunning() {
        BudgetPermit slowCall = stripe.acquire(); // started while closed, still running through all of this
        BudgetPermit probe = pauseWhileAnotherContainerRunsTheProbe();
        failed(probe);

        clock.advance(OPEN_WAIT);
        pauser.check();

        assertThat(stripe.callsInFlight()).isEqualTo(1);
        assertThat(container.isPauseRequested())
                .as("a new half-opening: this container may make the new probe")
                .isFalse();
        slowCall.release();
    }

    @Test
    void aContainerPausedWhileAnotherRunsTheProbeResumesWhenTheProbeIsGivenBackUndecided() {
        BudgetPermit probe = pauseWhileAnotherContainerRunsTheProbe();
        pauser.check();
        assertThat(container.isPauseRequested()).isTrue();

        // Its message was a duplicate: no call made, no verdict; nobody else will probe.
        probe.release();
        pauser.check();
        assertThat(stripe.circuitBreaker().getState()).isEqualTo(State.HALF_OPEN);
        assertThat(container.isPauseRequested()).isFalse();
    }

    @Test
    void aContainerIsPausedOnceForRepeatedRefusals() {
        openTheBreaker();
        pauser.pause(container, refusal());
        pauser.pause(container, refusal());

        assertThat(pauser.pauses("stripe")).isEqualTo(1);
    }
    /**
     * A resume racing a pause, on real threads: the breaker closed (another container's probe
     * closed it) just as this container's refusal reached the pauser, and the periodic check runs
     * meanwhile. The consumer thread is held right after the pauser recorded the pause and before
     * the container's pause request takes effect (as a preempted thread would be), while the check
     * runs on its own thread. The container must end resumed: without a lock around recording and
     * requesting, the check resumed the not-yet-paused container and dropped the record, then the
     * pause request landed with nothing left to resume it (paused for good with the budget closed).
     */
    @Test
    void aResumeRacingAPauseNeverLeavesTheContainerPausedForGood() throws Exception {
        CountDownLatch pausing = new CountDownLatch(1);
        CountDownLatch proceed = new CountDownLatch(1);
        KafkaMessageListenerContainer<String, String> held =
                new KafkaMessageListenerContainer<>(
                        new DefaultKafkaConsumerFactory<>(Map.of()), new ContainerProperties("payment.charge")) {
                    @Override
                    public void pause() {
                        pausing.countDown();
                        awaitQuietly(proceed);
                        super.pause();
                    }
                };
        held.setBeanName("held");
        assertThat(stripe.circuitBreaker().getState()).isEqualTo(State.CLOSED);

        Thread consumer = new Thread(() -> pauser.pause(held, refusal()), "consumer");
        consumer.start();
        assertThat(pausing.await(30, TimeUnit.SECONDS)).isTrue();
        Thread check = new Thread(pauser::check, "check");
        check.start();
        // The check either ran to its end or waits for the pause in progress.
        await().atMost(Duration.ofSeconds(30))
                .until(() -> !check.isAlive()
                        || check.getState() == Thread.State.BLOCKED
                        || check.getState() == Thread.State.WAITING);
        proceed.countDown();
        consumer.join();
        check.join();

        // As the next periodic check would: it resumes whatever the pauser still tracks.
        pauser.check();
        assertThat(held.isPauseRequested())
                .as("paused with the budget closed, and no longer tracked by the pauser")
                .isFalse();
        assertThat(pauser.isPaused(held)).isFalse();
    }

    private static void awaitQuietly(CountDownLatch latch) {
        try {
            assertThat(latch.await(30, TimeUnit.SECONDS)).isTrue();
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(ex);
        }
    }
}
