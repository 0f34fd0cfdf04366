package io.sumi.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sumi.consumer.exception.IdempotencyException;
import io.sumi.consumer.exception.MessageBusyException;
import io.sumi.store.ClaimOutcome;
import io.sumi.store.ClaimRequest;
import io.sumi.store.ClaimResult;
import io.sumi.store.MessageStatus;
import io.sumi.store.ProcessedMessage;
import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * Lease mode, one message at a time: claim → run → complete, and what a duplicate, a failure, a
 * live claim elsewhere and an expired lease do.
 */
class LeaseModeTests extends H2ExecutorTestSupport {

    @Test
    void claimRunsTheHandlerAndCompletesTheRow() throws Exception {
        AtomicReference<ProcessedMessage> duringHandler = new AtomicReference<>();
        AtomicReference<Integer> visibleToOthers = new AtomicReference<>();

        HandlerResult<String> result = executor.execute(lease(), message("order-1", "charge 10 EUR"), () -> {
            duringHandler.set(row("order-1").orElseThrow());
            visibleToOthers.set(ledgerRowsSeenByAnotherConnection());
            return "charged";
        });

        assertThat(result.outcome()).isEqualTo(MessageOutcome.PROCESSED);
        assertThat(result.value()).isEqualTo("charged");
        // While the handler ran the claim was already committed, so other consumers saw it.
        ProcessedMessage claim = duringHandler.get();
        assertThat(claim.status()).isEqualTo(MessageStatus.IN_PROGRESS);
        assertThat(claim.leaseUntil()).isEqualTo(claim.firstSeenAt().plus(LEASE));
        assertThat(claim.attempts()).isEqualTo(1);
        assertThat(claim.fingerprint()).isEqualTo(Fingerprints.of("charge 10 EUR"));
        assertThat(visibleToOthers.get()).isEqualTo(1);

        ProcessedMessage completed = row("order-1").orElseThrow();
        assertThat(completed.status()).isEqualTo(MessageStatus.COMPLETED);
        assertThat(completed.processedAt()).isBetween(claim.firstSeenAt(), ledgerNow());
        assertThat(completed.leaseUntil()).isNull();
        assertThat(completed.lastError()).isNull();
        assertThat(counting.claimAll).hasValue(1);
        assertThat(counting.completeAll).hasValue(1);
    }

    @Test
    void duplicateAfterCompletionSkipsTheHandler() throws Exception {
        executor.execute(lease(), message("order-1"), () -> "first");
        AtomicInteger calls = new AtomicInteger();

        HandlerResult<String> again = executor.execute(lease(), message("order-1"), () -> {
            calls.incrementAndGet();
            return "second";
        });

        assertThat(again.outcome()).isEqualTo(MessageOutcome.DUPLICATE);
        assertThat(again.value()).isNull();
        assertThat(calls).hasValue(0);
        assertThat(row("order-1").orElseThrow().attempts()).isEqualTo(1);
    }

    @Test
    void handlerExceptionPropagatesUnchangedAndReleasesTheClaim() {
        IllegalStateException failure = new IllegalStateException("provider answered 503");

        assertThatThrownBy(() -> executor.execute(lease(), message("order-1"), () -> {
                    throw failure;
                }))
                .isSameAs(failure);

        ProcessedMessage released = row("order-1").orElseThrow();
        assertThat(released.status()).isEqualTo(MessageStatus.IN_PROGRESS);
        assertReleasedAtOnce(released);
        assertThat(released.lastError()).contains("IllegalStateException").contains("provider answered 503");
        assertThat(failure.getSuppressed()).isEmpty();
    }

    @Test
    void redeliveryAfterAFailureRunsAtOnceAsTheSecondAttempt() throws Exception {
        assertThatThrownBy(() -> executor.execute(lease(), message("order-1"), () -> {
                    throw new IllegalStateException("first try fails");
                }))
                .isInstanceOf(IllegalStateException.class);
        AtomicReference<IdempotencyContext> context = new AtomicReference<>();

        // No time has passed for the row: a released claim needs no lease expiry.
        HandlerResult<String> retry = executor.execute(lease(), message("order-1"), () -> {
            context.set(IdempotencyContext.current());
            return "ok";
        });

        assertThat(retry.outcome()).isEqualTo(MessageOutcome.PROCESSED);
        assertThat(context.get()).isEqualTo(new IdempotencyContext("order-1", consumer, 2, IdempotencyMode.LEASE));
        ProcessedMessage completed = row("order-1").orElseThrow();
        assertThat(completed.status()).isEqualTo(MessageStatus.COMPLETED);
        assertThat(completed.attempts()).isEqualTo(2);
        assertThat(completed.lastError()).isNull();
    }

    @Test
    void checkedHandlerExceptionPropagatesUnchangedAndReleasesTheClaim() {
        IOException failure = new IOException("SMTP connection reset");

        assertThatThrownBy(() -> executor.execute(lease(), message("mail-1"), () -> {
                    throw failure;
                }))
                .isSameAs(failure);

        assertReleasedAtOnce(row("mail-1").orElseThrow());
    }

    @Test
    void errorThrownByTheHandlerAlsoReleasesTheClaim() {
        AssertionError failure = new AssertionError("handler bug");

        assertThatThrownBy(() -> executor.execute(lease(), message("order-1"), () -> {
                    throw failure;
                }))
                .isSameAs(failure);

        assertReleasedAtOnce(row("order-1").orElseThrow());
    }

    @Test
    void liveClaimElsewhereIsBusyUntilItsLeaseExpiresThenTheMessageIsTakenOver() throws Exception {
        // Another instance claims the key and then goes silent (a crash, a GC pause).
        ClaimResult other =
                store.claim(consumer, new ClaimRequest("order-1", Fingerprints.of("payload of order-1")), LEASE);
        assertThat(other.outcome()).isEqualTo(ClaimOutcome.CLAIMED);
        AtomicInteger calls = new AtomicInteger();
        AtomicReference<IdempotencyContext> context = new AtomicReference<>();
        IdempotentExecutor.HandlerBody<String> body = () -> {
            calls.incrementAndGet();
            context.set(IdempotencyContext.current());
            return "sent";
        };

        advance(LEASE.minusSeconds(30));
        assertThatThrownBy(() -> executor.execute(lease(), message("order-1"), body))
                .isInstanceOf(MessageBusyException.class)
                .hasMessageContaining("order-1")
                .hasMessageContaining(consumer)
                .satisfies(ex ->
                        assertThat(((IdempotencyException) ex).isRetryable()).isTrue());
        assertThat(calls).hasValue(0);

        advance(Duration.ofSeconds(30));
        HandlerResult<String> result = executor.execute(lease(), message("order-1"), body);

        assertThat(result.outcome()).isEqualTo(MessageOutcome.PROCESSED);
        assertThat(calls).hasValue(1);
        assertThat(context.get().attempt()).isEqualTo(2);
        assertThat(status("order-1")).isEqualTo(MessageStatus.COMPLETED);
        // The silent instance wakes up: its claim is no longer its own, so it cannot complete it.
        assertThat(store.complete(other.message())).isFalse();
    }

    @Test
    void handlerThatOutlivesItsLeaseCountsALostLease() throws Exception {
        HandlerDefinition definition =
                definition(IdempotencyMode.LEASE).lease(Duration.ofSeconds(30)).build();
        AtomicInteger runs = new AtomicInteger();

        HandlerResult<String> first = executor.execute(definition, message("order-1"), () -> {
            runs.incrementAndGet();
            // The handler is slow: its lease runs out, and a redelivery on another consumer takes over.
            advance(Duration.ofSeconds(31));
            HandlerResult<String> second = CompletableFuture.supplyAsync(() -> {
                        try {
                            return executor.execute(definition, message("order-1"), () -> {
                                runs.incrementAndGet();
                                return "second";
                            });
                        } catch (Exception ex) {
                            throw new IllegalStateException(ex);
                        }
                    })
                    .get(10, TimeUnit.SECONDS);
            assertThat(second.outcome()).isEqualTo(MessageOutcome.PROCESSED);
            return "first";
        });

        // The first run did happen, so it is reported; the double run is what the metric is for.
        assertThat(first.outcome()).isEqualTo(MessageOutcome.PROCESSED);
        assertThat(runs).hasValue(2);
        assertThat(counter("sumi.leases.lost")).isEqualTo(1.0);
        ProcessedMessage row = row("order-1").orElseThrow();
        assertThat(row.status()).isEqualTo(MessageStatus.COMPLETED);
        assertThat(row.attempts()).isEqualTo(2);
    }

    @Test
    void handlerThatOutlivesItsLeaseWhileTheTakerFailsIsDeliveredAgain() throws Exception {
        HandlerDefinition definition =
                definition(IdempotencyMode.LEASE).lease(Duration.ofSeconds(30)).build();
        AtomicInteger runs = new AtomicInteger();

        assertThatThrownBy(() -> executor.execute(definition, message("order-1"), () -> {
                    runs.incrementAndGet();
                    // The handler is slow: its lease runs out, a redelivery on another consumer takes over and fails.
                    advance(Duration.ofSeconds(31));
                    Exception taker = deliverElsewhere(definition, "order-1", () -> {
                        runs.incrementAndGet();
                        throw new IllegalStateException("provider down");
                    });
                    assertThat(taker).hasMessage("provider down");
                    return "first";
                }))
                .isInstanceOf(MessageBusyException.class)
                .hasMessageContaining("was lost to another consumer before completion");

        // Not acked: the row is not COMPLETED, so the message must come again, and it runs again.
        assertThat(status("order-1")).isEqualTo(MessageStatus.IN_PROGRESS);
        assertThat(counter("sumi.leases.lost")).isEqualTo(1.0);
        HandlerResult<String> again = executor.execute(definition, message("order-1"), () -> {
            runs.incrementAndGet();
            return "third";
        });
        assertThat(again.outcome()).isEqualTo(MessageOutcome.PROCESSED);
        assertThat(runs).hasValue(3);
        assertThat(status("order-1")).isEqualTo(MessageStatus.COMPLETED);
    }

    @Test
    void completingWithinTheLeaseCountsNoLostLease() throws Exception {
        executor.execute(lease(), message("order-1"), () -> {
            advance(LEASE.minusSeconds(1));
            return "done";
        });

        assertThat(counter("sumi.leases.lost")).isZero();
        assertThat(status("order-1")).isEqualTo(MessageStatus.COMPLETED);
    }

    @Test
    void eachNamespaceProcessesTheSameKeyOnce() throws Exception {
        HandlerDefinition mail = lease();
        HandlerDefinition audit = HandlerDefinition.builder(consumer + "-audit")
                .mode(IdempotencyMode.LEASE)
                .build();
        AtomicInteger calls = new AtomicInteger();
        try {
            executor.execute(mail, message("order-1"), calls::incrementAndGet);
            HandlerResult<Integer> other = executor.execute(audit, message("order-1"), calls::incrementAndGet);

            assertThat(other.outcome()).isEqualTo(MessageOutcome.PROCESSED);
            assertThat(calls).hasValue(2);
        } finally {
            jdbc.update("DELETE FROM processed_messages WHERE consumer = ?", consumer + "-audit");
        }
    }

    @Test
    void transactionalModeWithoutATransactionManagerFailsClearlyAndLeaseModeStillWorks() throws Exception {
        IdempotentExecutor plain = IdempotentExecutor.builder(store).build();
        AtomicInteger calls = new AtomicInteger();

        assertThatThrownBy(() -> plain.execute(transactional(), message("order-1"), calls::incrementAndGet))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("transaction manager");
        HandlerResult<IdempotencyMode> auto = plain.execute(
                auto(), message("order-2"), () -> IdempotencyContext.current().mode());

        assertThat(calls).hasValue(0);
        assertThat(row("order-1")).isEmpty();
        assertThat(auto.value()).isEqualTo(IdempotencyMode.LEASE);
    }
}
