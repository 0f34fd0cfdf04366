package io.sumi.outbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class OutboxBackoffTests {

    @Test
    void theDefaultWaitsThirtySecondsDoublingUpToFifteenMinutes() {
        OutboxBackoff backoff = OutboxBackoff.DEFAULT;
        assertThat(backoff.delay(1, 0)).isEqualTo(Duration.ofSeconds(30));
        assertThat(backoff.delay(2, 0)).isEqualTo(Duration.ofMinutes(1));
        assertThat(backoff.delay(3, 0)).isEqualTo(Duration.ofMinutes(2));
        assertThat(backoff.delay(5, 0)).isEqualTo(Duration.ofMinutes(8));
        assertThat(backoff.delay(6, 0)).isEqualTo(Duration.ofMinutes(15));
        assertThat(backoff.delay(60, 0)).isEqualTo(Duration.ofMinutes(15));
    }

    @Test
    void jitterOnlyShortensTheWaitSoTheCapHolds() {
        OutboxBackoff backoff = OutboxBackoff.DEFAULT;
        assertThat(backoff.delay(1, 0.999)).isBetween(Duration.ofSeconds(24), Duration.ofSeconds(30));
        assertThat(backoff.delay(40, 0.5))
                .isEqualTo(Duration.ofMinutes(15).multipliedBy(9).dividedBy(10));
        for (int failures = 1; failures < 30; failures++) {
            assertThat(backoff.delay(failures, Math.random()))
                    .isLessThanOrEqualTo(Duration.ofMinutes(15))
                    .isPositive();
        }
    }

    @Test
    void invalidSettingsAreRejected() {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> new OutboxBackoff(Duration.ZERO, 2, Duration.ofMinutes(1), 0));
        assertThatIllegalArgumentException()
                .isThrownBy(() -> new OutboxBackoff(Duration.ofMinutes(2), 2, Duration.ofMinutes(1), 0))
                .withMessageContaining("must not be below");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> new OutboxBackoff(Duration.ofSeconds(1), 0.5, Duration.ofMinutes(1), 0));
        assertThatIllegalArgumentException()
                .isThrownBy(() -> new OutboxBackoff(Duration.ofSeconds(1), 2, Duration.ofMinutes(1), 1.5));
        assertThatIllegalArgumentException().isThrownBy(() -> OutboxBackoff.DEFAULT.delay(0, 0));
    }
}
