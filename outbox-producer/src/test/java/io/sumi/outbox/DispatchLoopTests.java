package io.sumi.outbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The loop alone, with rounds that only count: back to back while rounds find rows, an idle wait
 * that a wake-up ends, failed rounds retried, stop. No database.
 */
class DispatchLoopTests {

    private static final Duration HOUR = Duration.ofHours(1);

    private DispatchLoop<?> loop;

    @AfterEach
    void stop() {
        if (loop != null) {
            loop.stop(Duration.ofSeconds(5));
        }
    }

    @Test
    void roundsRunBackToBackWhileTheyFindRowsThenTheLoopWaits() {
        AtomicInteger rounds = new AtomicInteger();
        loop = DispatchLoop.ofRounds(() -> rounds.incrementAndGet() <= 3, HOUR, HOUR);

        loop.start();

        // Three rounds found rows, the fourth found none: without waiting an hour in between.
        await().atMost(Duration.ofSeconds(10))
                .untilAsserted(() -> assertThat(rounds).hasValue(4));
        assertThat(loop.isRunning()).isTrue();
    }

    @Test
    void aWakeUpEndsTheIdleWaitAtOnce() {
        AtomicInteger rounds = new AtomicInteger();
        loop = DispatchLoop.ofRounds(counting(rounds), HOUR, HOUR);
        loop.start();
        await().atMost(Duration.ofSeconds(10))
                .untilAsserted(() -> assertThat(rounds).hasValue(1));

        loop.wakeUp();

        await().atMost(Duration.ofSeconds(10))
                .untilAsserted(() -> assertThat(rounds).hasValue(2));
    }

    @Test
    void aFailedRoundIsRetriedAfterTheIdleWait() {
        AtomicInteger rounds = new AtomicInteger();
        loop = DispatchLoop.ofRounds(
                () -> {
                    rounds.incrementAndGet();
                    throw new IllegalStateException("database down");
                },
                Duration.ofMillis(10),
                Duration.ofMillis(20));

        loop.start();

        await().atMost(Duration.ofSeconds(10))
                .untilAsserted(() -> assertThat(rounds).hasValueGreaterThanOrEqualTo(3));
        assertThat(loop.isRunning()).isTrue();
    }

    @Test
    void stopEndsTheLoopAndStartIsIdempotent() {
        AtomicInteger rounds = new AtomicInteger();
        loop = DispatchLoop.ofRounds(counting(rounds), HOUR, HOUR);

        assertThat(loop.start()).isTrue();
        assertThat(loop.start()).isFalse();
        await().atMost(Duration.ofSeconds(10))
                .untilAsserted(() -> assertThat(rounds).hasValue(1));
        loop.stop(Duration.ofSeconds(5));

        assertThat(loop.isRunning()).isFalse();
    }

    @Test
    void aPipelinedLoopClaimsWhileEarlierBatchesAreInFlightButNeverMoreThanItsDepth() {
        PipelineProbe probe = new PipelineProbe(10);
        loop = new DispatchLoop<>(probe, 3, HOUR, HOUR);

        loop.start();

        await().atMost(Duration.ofSeconds(10))
                .untilAsserted(() -> assertThat(probe.inFlight).hasValue(3));
        assertThat(probe.claims)
                .as("no claim while three batches are in flight")
                .hasValue(3);
        probe.release.countDown();
        // Ten batches, then a claim that finds nothing: the loop waits (an hour) for a wake-up.
        await().atMost(Duration.ofSeconds(10))
                .untilAsserted(() -> assertThat(probe.completed).hasValue(10));
        assertThat(probe.maxInFlight).hasValue(3);
    }

    @Test
    void aLoopOfDepthOneCompletesEachBatchBeforeItClaimsTheNext() {
        PipelineProbe probe = new PipelineProbe(10);
        probe.release.countDown();
        loop = new DispatchLoop<>(probe, 1, HOUR, HOUR);

        loop.start();

        await().atMost(Duration.ofSeconds(10))
                .untilAsserted(() -> assertThat(probe.completed).hasValue(10));
        assertThat(probe.maxInFlight).hasValue(1);
    }

    @Test
    void stoppingAPipelinedLoopClaimsNothingMoreAndWaitsForTheBatchesInFlight() throws Exception {
        PipelineProbe probe = new PipelineProbe(10);
        DispatchLoop<Integer> pipelined = new DispatchLoop<>(probe, 3, HOUR, HOUR);
        loop = pipelined;
        pipelined.start();
        await().atMost(Duration.ofSeconds(10))
                .untilAsserted(() -> assertThat(probe.inFlight).hasValue(3));

        Thread stopper = new Thread(() -> pipelined.stop(Duration.ofSeconds(30)));
        stopper.start();
        await().atMost(Duration.ofSeconds(10)).until(() -> !pipelined.isRunning());
        assertThat(stopper.isAlive()).as("stop waits for the batches in flight").isTrue();
        probe.release.countDown();
        stopper.join(10_000);

        assertThat(stopper.isAlive()).isFalse();
        assertThat(probe.completed).as("every claimed batch was completed").hasValue(3);
        assertThat(probe.claims).as("nothing claimed after the stop").hasValue(3);
    }

    /** Claims {@code batches} numbered batches, then nothing; completing one waits for {@link #release}. */
    static final class PipelineProbe implements DispatchLoop.Round<Integer> {

        final AtomicInteger claims = new AtomicInteger();
        final AtomicInteger inFlight = new AtomicInteger();
        final AtomicInteger maxInFlight = new AtomicInteger();
        final AtomicInteger completed = new AtomicInteger();
        final CountDownLatch release = new CountDownLatch(1);
        private final int batches;

        PipelineProbe(int batches) {
            this.batches = batches;
        }

        @Override
        public @Nullable Integer claim() {
            int claim = claims.incrementAndGet();
            if (claim > batches) {
                return null;
            }
            // Counted as in flight from its claim, as the loop counts it.
            maxInFlight.accumulateAndGet(inFlight.incrementAndGet(), Math::max);
            return claim;
        }

        @Override
        public void complete(Integer batch) {
            try {
                release.await();
            } catch (InterruptedException ex) {
                Thread.currentThread().interrupt();
            } finally {
                completed.incrementAndGet();
                inFlight.decrementAndGet();
            }
        }
    }

    private static BooleanSupplier counting(AtomicInteger rounds) {
        return () -> {
            rounds.incrementAndGet();
            return false;
        };
    }
}
