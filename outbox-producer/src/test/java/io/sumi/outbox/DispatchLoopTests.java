package io.sumi.outbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.awaitility.core.ConditionFactory;
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

    @Test
    void aClaimThatFindsNothingWhileBatchesAreInFlightStopsFurtherClaimsAtThatDepth() {
        // Two batches of heads, depth 4: the third claim finds nothing (the first two hold every
        // head). From then on each completed batch frees the heads of one claim, and no claim is made
        // with two batches in flight: exactly one fruitless claim (a walk of the whole backlog on a
        // real outbox) for the whole drain, not one per batch.
        HeadLimitedOutbox outbox = new HeadLimitedOutbox(2, 20);
        loop = new DispatchLoop<>(outbox, 4, HOUR, HOUR, HOUR);
        loop.start();

        outbox.drainOneCompletionAtATime(3, 1);

        assertThat(outbox.fruitless)
                .as("claims that found nothing while rows were left")
                .hasValue(1);
        assertThat(outbox.maxHeld).hasValue(2);
    }

    @Test
    void withoutTheLimitEveryCompletionIsFollowedByAFruitlessClaim() {
        // The negative control of the test above: a limit that ends at once is no limit. The same
        // drain makes a claim that finds nothing after every completion that leaves rows to claim
        // (17 of the 18 made while rows are left: after the 18th the last row is claimed).
        HeadLimitedOutbox outbox = new HeadLimitedOutbox(2, 20);
        loop = new DispatchLoop<>(outbox, 4, HOUR, HOUR, Duration.ZERO);
        loop.start();

        outbox.drainOneCompletionAtATime(3, 2);

        assertThat(outbox.fruitless).hasValue(1 + 17);
    }

    @Test
    void theLimitEndsAfterItsResetSoThatMoreHeadsAreTakenWhenThereAreSome() {
        // Heads for one batch at first; then for four (rows appended, another dispatcher's leases
        // ended), without a wake-up: after the next completion, once the limit has ended, the loop
        // fills its depth again. A limit that never ended would keep one batch in flight.
        HeadLimitedOutbox outbox = new HeadLimitedOutbox(1, 100);
        loop = new DispatchLoop<>(outbox, 4, HOUR, HOUR, Duration.ofMillis(50));
        loop.start();
        await().atMost(Duration.ofSeconds(10))
                .untilAsserted(() -> assertThat(outbox.fruitless).hasValue(1));

        outbox.heads.set(4);
        outbox.completions.release();

        await().atMost(Duration.ofSeconds(10))
                .untilAsserted(() -> assertThat(outbox.held).hasValue(4));
        outbox.completions.release(1_000); // the senders complete the rest, and stop need not interrupt them
    }

    @Test
    void aWakeUpEndsTheLimitAtOnce() {
        // Rows appended (the producer's wake-up) may be heads the batches in flight do not hold:
        // the loop claims again at once, with its whole depth, before any batch completes.
        HeadLimitedOutbox outbox = new HeadLimitedOutbox(1, 100);
        loop = new DispatchLoop<>(outbox, 4, HOUR, HOUR, HOUR);
        loop.start();
        await().atMost(Duration.ofSeconds(10))
                .untilAsserted(() -> assertThat(outbox.fruitless).hasValue(1));

        outbox.heads.set(4);
        loop.wakeUp();

        await().atMost(Duration.ofSeconds(10))
                .untilAsserted(() -> assertThat(outbox.held).hasValue(4));
        assertThat(outbox.completed).hasValue(0);
        outbox.completions.release(1_000);
    }

    /**
     * An ordered outbox whose pending rows belong to few aggregates: at most {@link #heads} batches
     * can be claimed at once (a claim takes heads, and the next rows of an aggregate wait for its
     * head), {@code batches} in all. A claim finds nothing while every head is held; completing a
     * batch frees its heads, one completion per permit the test gives.
     */
    static final class HeadLimitedOutbox implements DispatchLoop.Round<Integer> {

        final AtomicInteger heads;
        final AtomicInteger claims = new AtomicInteger();
        final AtomicInteger held = new AtomicInteger();
        final AtomicInteger maxHeld = new AtomicInteger();
        final AtomicInteger fruitless = new AtomicInteger();
        final AtomicInteger completed = new AtomicInteger();
        private final AtomicInteger left;
        private final int batches;
        final Semaphore completions = new Semaphore(0);

        HeadLimitedOutbox(int heads, int batches) {
            this.heads = new AtomicInteger(heads);
            this.left = new AtomicInteger(batches);
            this.batches = batches;
        }

        @Override
        public synchronized @Nullable Integer claim() {
            claims.incrementAndGet();
            if (left.get() == 0) {
                return null;
            }
            if (held.get() >= heads.get()) {
                fruitless.incrementAndGet();
                return null;
            }
            left.decrementAndGet();
            maxHeld.accumulateAndGet(held.incrementAndGet(), Math::max);
            return claims.get();
        }

        @Override
        public void complete(Integer batch) {
            try {
                completions.acquire();
            } catch (InterruptedException ex) {
                Thread.currentThread().interrupt();
            } finally {
                synchronized (this) {
                    held.decrementAndGet();
                }
                completed.incrementAndGet();
            }
        }

        /**
         * Waits for the {@code initialClaims} of the start, then completes the batches one at a
         * time; after each completion made while rows were left, waits for the
         * {@code claimsPerCompletion} claims it leads to before the next, so that the interleaving
         * is the same in every run.
         */
        void drainOneCompletionAtATime(int initialClaims, int claimsPerCompletion) {
            promptly().untilAsserted(() -> assertThat(claims).hasValue(initialClaims));
            for (int done = 1; done <= batches; done++) {
                boolean rowsLeft = left.get() > 0;
                int expectedClaims = claims.get() + claimsPerCompletion;
                int completedNow = done;
                completions.release();
                promptly().untilAsserted(() -> assertThat(completed).hasValue(completedNow));
                if (rowsLeft) {
                    promptly().untilAsserted(() -> assertThat(claims).hasValueGreaterThanOrEqualTo(expectedClaims));
                }
            }
        }
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

    /** Polls every millisecond: a drain waits for a few hundred small steps. */
    private static ConditionFactory promptly() {
        return await().atMost(Duration.ofSeconds(10)).pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(1));
    }

    private static BooleanSupplier counting(AtomicInteger rounds) {
        return () -> {
            rounds.incrementAndGet();
            return false;
        };
    }
}
