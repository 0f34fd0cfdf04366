package io.sumi.consumer.binder;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sumi.consumer.exception.BatchFailedException;
import io.sumi.consumer.exception.LedgerUnavailableException;
import io.sumi.consumer.exception.MessageBusyException;
import io.sumi.consumer.exception.MissingIdempotencyKeyException;
import io.sumi.consumer.exception.ReconciliationRequiredException;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class BusyPolicyTests {

    private final AtomicLong now = new AtomicLong();
    private final BusyPolicy policy =
            BusyPolicy.of(Duration.ofSeconds(1), Duration.ofSeconds(5), now::get, d -> now.addAndGet(d.toNanos()));

    private static MessageBusyException busy(long token, Instant leaseUntil) {
        return new MessageBusyException("busy", token, leaseUntil);
    }

    @Test
    void busyKeyIsHeldPastMaxWaitWhileTheDatabaseSaysTheSameLeaseLives() {
        BusyHold hold = policy.start();
        Instant lease = Instant.parse("2026-01-01T00:00:20Z");
        for (int i = 0; i < 60; i++) {
            assertThat(hold.retry(busy(7, lease), () -> true)).isTrue();
        }
        assertThat(hold.retries()).isEqualTo(60);
        assertThat(hold.firstLeaseEnded()).isFalse();
    }

    @Test
    void busyKeyIsHandedBackOnceTheFirstLeaseEndedAndMaxWaitPassed() {
        BusyHold hold = policy.start();
        Instant lease = Instant.parse("2026-01-01T00:00:20Z");
        assertThat(hold.retry(busy(7, lease), () -> true)).isTrue();
        // Renewed by a live holder before maxWait: still held until maxWait.
        assertThat(hold.retry(busy(7, lease.plusSeconds(20)), () -> true)).isTrue();
        assertThat(hold.firstLeaseEnded()).isTrue();
        while (now.get() < Duration.ofSeconds(5).toNanos()) {
            assertThat(hold.retry(busy(7, lease.plusSeconds(20)), () -> true)).isTrue();
        }
        assertThat(hold.retry(busy(7, lease.plusSeconds(20)), () -> true)).isFalse();
    }

    @Test
    void takeOverByAnotherClaimEndsTheFirstLease() {
        BusyHold hold = policy.start();
        Instant lease = Instant.parse("2026-01-01T00:00:20Z");
        hold.retry(busy(7, lease), () -> true);
        now.addAndGet(Duration.ofSeconds(10).toNanos());
        assertThat(hold.retry(busy(7, lease), () -> true)).isTrue();
        assertThat(hold.retry(busy(8, lease), () -> true)).isFalse();
    }

    @Test
    void reconciliationIsHeldForMaxWaitThenHandedBack() {
        BusyHold hold = policy.start();
        ReconciliationRequiredException reconcile = new ReconciliationRequiredException("c", "k", "reconcile");
        int runs = 0;
        while (hold.retry(reconcile, () -> true)) {
            runs++;
        }
        assertThat(runs).isEqualTo(5);
    }

    @Test
    void anUnreachableLedgerIsHeldPastEveryBoundUntilTheContainerStops() {
        BusyHold hold = policy.start();
        LedgerUnavailableException down = new LedgerUnavailableException(
                "c", "claim", new java.sql.SQLTransientConnectionException("down", "08006"));
        // Far past maxWait (5 s): handing it back would only spend the broker's redelivery budget.
        for (int i = 0; i < 600; i++) {
            assertThat(hold.retry(down, () -> true)).isTrue();
        }
        assertThat(hold.retry(new BatchFailedException(0, down), () -> true)).isTrue();
        assertThat(hold.retry(down, () -> false)).isFalse();
    }

    @Test
    void aBatchFailureStandsForItsCause() {
        BusyHold hold = policy.start();
        assertThat(hold.retry(new BatchFailedException(2, busy(1, Instant.EPOCH)), () -> true))
                .isTrue();
    }

    @Test
    void otherRefusalsAndAStoppedContainerAreNotHeld() {
        BusyHold hold = policy.start();
        assertThat(hold.retry(new MissingIdempotencyKeyException("no key"), () -> true))
                .isFalse();
        assertThat(hold.retry(busy(1, Instant.EPOCH), () -> false)).isFalse();
    }

    @Test
    void anInterruptEndsTheHoldAndKeepsTheFlag() {
        BusyHold hold = BusyPolicy.of(Duration.ofSeconds(1), Duration.ZERO, now::get, d -> {
                    throw new InterruptedException();
                })
                .start();
        assertThat(hold.retry(busy(1, Instant.EPOCH), () -> true)).isFalse();
        assertThat(Thread.interrupted()).isTrue();
    }

    @Test
    void invalidBoundsAreRefused() {
        assertThatThrownBy(() -> BusyPolicy.of(Duration.ZERO, Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> BusyPolicy.of(Duration.ofSeconds(1), Duration.ofSeconds(-1)))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void keepDecidesAsRetryDoesWithoutWaiting() {
        BusyHold hold = policy.start();
        Instant lease = Instant.parse("2026-01-01T00:00:20Z");
        assertThat(hold.keep(busy(7, lease), () -> true)).isTrue();
        assertThat(now.get()).as("no wait: the caller waits").isZero();
        assertThat(hold.keep(busy(7, lease.plusSeconds(20)), () -> true)).isTrue(); // renewed: first lease ended
        assertThat(hold.retries()).isEqualTo(2);
        assertThat(hold.keep(busy(7, lease.plusSeconds(20)), () -> false))
                .as("container stopping")
                .isFalse();
        assertThat(hold.keep(new MissingIdempotencyKeyException("no key"), () -> true))
                .isFalse();
        now.set(Duration.ofSeconds(5).toNanos()); // the caller waited maxWait meanwhile
        assertThat(hold.keep(busy(7, lease.plusSeconds(20)), () -> true))
                .as("past the bound")
                .isFalse();
        assertThat(hold.keep(
                        new LedgerUnavailableException(
                                "c", "claim", new java.sql.SQLTransientConnectionException("down", "08006")),
                        () -> true))
                .as("an outage is held while it lasts")
                .isTrue();
    }

    @Test
    void aPolicyHoldingBusyKeysWhileTheirHolderLivesHoldsARenewedLeasePastMaxWait() {
        BusyHold hold = policy.holdingBusyKeysWhileTheirHolderLives().start();
        Instant lease = Instant.parse("2026-01-01T00:00:20Z");
        for (int i = 0; i < 60; i++) { // a minute, the holder renewing its lease each second
            assertThat(hold.retry(busy(7, lease.plusSeconds(i)), () -> true)).isTrue();
        }
        assertThat(hold.firstLeaseEnded()).isTrue();
        ReconciliationRequiredException reconcile = new ReconciliationRequiredException("c", "k", "uncertain");
        assertThat(hold.retry(reconcile, () -> true))
                .as("reconciliation keeps its bound")
                .isFalse();
        assertThat(hold.retry(busy(7, lease.plusSeconds(61)), () -> false))
                .as("the container stops")
                .isFalse();
        // The same holds under the ordinary policy: released once maxWait has passed.
        BusyHold bounded = policy.start();
        for (int i = 0; i < 5; i++) {
            bounded.retry(busy(7, lease.plusSeconds(100 + i)), () -> true);
        }
        assertThat(bounded.retry(busy(7, lease.plusSeconds(110)), () -> true)).isFalse();
    }
}
