package io.sumi.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.sumi.consumer.exception.MessageBusyException;
import io.sumi.store.ClaimRequest;
import io.sumi.store.ProcessedMessage;
import io.sumi.store.jdbc.JdbcProcessedMessageStore;
import java.time.Clock;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Instances do not agree on the time. Two executors on one ledger whose stores' clocks differ by
 * more than the lease: every lease decision is the database's, so the one whose clock runs ahead
 * cannot take over a live lease, and an expired lease is taken over whatever the clocks say.
 */
class ClockSkewTests extends H2ExecutorTestSupport {

    static final Duration SKEW = LEASE.multipliedBy(2);

    IdempotentExecutor executorWithClock(Duration offset) {
        JdbcProcessedMessageStore skewed = JdbcProcessedMessageStore.builder(dataSource)
                .clock(Clock.offset(Clock.systemUTC(), offset))
                .build();
        return IdempotentExecutor.builder(skewed)
                .transactionSupport(TransactionSupport.of(transactionManager))
                .meterRegistry(meters)
                .build();
    }

    @Test
    void anExecutorWhoseClockRunsAheadDoesNotTakeOverALiveLease() throws Exception {
        IdempotentExecutor onTime = executorWithClock(Duration.ZERO);
        IdempotentExecutor ahead = executorWithClock(SKEW);
        AtomicInteger charges = new AtomicInteger();
        CountDownLatch running = new CountDownLatch(1);
        CountDownLatch finish = new CountDownLatch(1);

        CompletableFuture<HandlerResult<String>> first = CompletableFuture.supplyAsync(() -> {
            try {
                return onTime.execute(lease(), message("order-1"), () -> {
                    charges.incrementAndGet();
                    running.countDown();
                    assertThat(finish.await(10, TimeUnit.SECONDS)).isTrue();
                    return "charged";
                });
            } catch (Exception ex) {
                throw new IllegalStateException(ex);
            }
        });
        assertThat(running.await(10, TimeUnit.SECONDS)).isTrue();

        assertThatThrownBy(() -> ahead.execute(lease(), message("order-1"), () -> {
                    charges.incrementAndGet();
                    return "charged twice";
                }))
                .isInstanceOf(MessageBusyException.class);
        assertThatThrownBy(() -> outerTransaction.execute(status -> {
                    try {
                        return ahead.execute(transactional(), message("order-1"), charges::incrementAndGet);
                    } catch (Exception ex) {
                        throw new IllegalStateException(ex);
                    }
                }))
                .hasCauseInstanceOf(MessageBusyException.class);

        finish.countDown();
        assertThat(first.get(10, TimeUnit.SECONDS).outcome()).isEqualTo(MessageOutcome.PROCESSED);
        assertThat(ahead.execute(lease(), message("order-1"), charges::incrementAndGet)
                        .outcome())
                .isEqualTo(MessageOutcome.DUPLICATE);
        assertThat(charges).hasValue(1);
    }

    @Test
    void anExpiredLeaseIsTakenOverByAnExecutorWhoseClockRunsBehind() throws Exception {
        // An instance claims with a one-second lease and dies before completing.
        ProcessedMessage dead = store.claim(consumer, new ClaimRequest("order-1", null), Duration.ofSeconds(1))
                .message();
        IdempotentExecutor behind = executorWithClock(SKEW.negated());
        AtomicInteger charges = new AtomicInteger();

        await().atMost(Duration.ofSeconds(10))
                .ignoreException(MessageBusyException.class)
                .untilAsserted(() -> assertThat(behind.execute(lease(), message("order-1"), charges::incrementAndGet)
                                .outcome())
                        .isEqualTo(MessageOutcome.PROCESSED));

        assertThat(charges).hasValue(1);
        assertThat(row("order-1").orElseThrow().attempts()).isEqualTo(2);
        assertThat(store.complete(dead))
                .as("the dead instance's claim is fenced off")
                .isFalse();
    }
}
