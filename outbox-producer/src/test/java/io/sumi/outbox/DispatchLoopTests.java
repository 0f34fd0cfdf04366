package io.sumi.outbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The loop alone, with rounds that only count: back to back while rounds find rows, an idle wait
 * that a wake-up ends, failed rounds retried, stop. No database.
 */
class DispatchLoopTests {

    private static final Duration HOUR = Duration.ofHours(1);

    private DispatchLoop loop;

    @AfterEach
    void stop() {
        if (loop != null) {
            loop.stop(Duration.ofSeconds(5));
        }
    }

    @Test
    void roundsRunBackToBackWhileTheyFindRowsThenTheLoopWaits() {
        AtomicInteger rounds = new AtomicInteger();
        loop = new DispatchLoop(() -> rounds.incrementAndGet() <= 3, HOUR, HOUR);

        loop.start();

        // Three rounds found rows, the fourth found none: without waiting an hour in between.
        await().atMost(Duration.ofSeconds(10))
                .untilAsserted(() -> assertThat(rounds).hasValue(4));
        assertThat(loop.isRunning()).isTrue();
    }

    @Test
    void aWakeUpEndsTheIdleWaitAtOnce() {
        AtomicInteger rounds = new AtomicInteger();
        loop = new DispatchLoop(counting(rounds), HOUR, HOUR);
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
        loop = new DispatchLoop(
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
        loop = new DispatchLoop(counting(rounds), HOUR, HOUR);

        assertThat(loop.start()).isTrue();
        assertThat(loop.start()).isFalse();
        await().atMost(Duration.ofSeconds(10))
                .untilAsserted(() -> assertThat(rounds).hasValue(1));
        loop.stop(Duration.ofSeconds(5));

        assertThat(loop.isRunning()).isFalse();
    }

    private static BooleanSupplier counting(AtomicInteger rounds) {
        return () -> {
            rounds.incrementAndGet();
            return false;
        };
    }
}
