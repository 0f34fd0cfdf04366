package io.sumi.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sumi.consumer.exception.MessageBusyException;
import io.sumi.store.ClaimRequest;
import io.sumi.store.MessageStatus;
import io.sumi.store.ProcessedMessage;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * Transactional mode: the ledger row and the handler's rows commit together or not at all, and
 * {@code AUTO} picks the mode by whether a transaction is active.
 */
class TransactionalModeTests extends H2ExecutorTestSupport {

    @Test
    void handlerRowsAndLedgerRowCommitTogether() throws Exception {
        AtomicReference<Integer> visibleToOthers = new AtomicReference<>();
        AtomicReference<Boolean> inTransaction = new AtomicReference<>();

        HandlerResult<String> result = executor.execute(transactional(), message("order-1"), () -> {
            inTransaction.set(TransactionSynchronizationManager.isActualTransactionActive());
            recordEffect("order-1");
            visibleToOthers.set(ledgerRowsSeenByAnotherConnection());
            return "stored";
        });

        assertThat(result.outcome()).isEqualTo(MessageOutcome.PROCESSED);
        assertThat(result.value()).isEqualTo("stored");
        assertThat(inTransaction.get()).isTrue();
        assertThat(visibleToOthers.get())
                .as("the ledger row is not committed before the handler's rows")
                .isZero();
        assertThat(effectKeys()).containsExactly("order-1");
        ProcessedMessage row = row("order-1").orElseThrow();
        assertThat(row.status()).isEqualTo(MessageStatus.COMPLETED);
        assertThat(row.processedAt()).isBetween(ledgerNow().minus(Duration.ofMinutes(1)), ledgerNow());
        assertThat(row.attempts()).isEqualTo(1);
        assertThat(counting.claimAllCompleted).hasValue(1);
        assertThat(counting.claimAll).hasValue(0);
        assertThat(counting.completeAll).as("no second round trip to complete").hasValue(0);
    }

    @Test
    void duplicateAfterCommitSkipsTheHandler() throws Exception {
        executor.execute(transactional(), message("order-1"), () -> {
            recordEffect("order-1");
            return null;
        });
        AtomicInteger calls = new AtomicInteger();

        HandlerResult<Integer> again = executor.execute(transactional(), message("order-1"), calls::incrementAndGet);

        assertThat(again.outcome()).isEqualTo(MessageOutcome.DUPLICATE);
        assertThat(calls).hasValue(0);
        assertThat(effectRows()).isEqualTo(1);
    }

    @Test
    void throwingHandlerLeavesNeitherItsRowsNorTheLedgerRow() throws Exception {
        IllegalStateException failure = new IllegalStateException("constraint of the business table");

        assertThatThrownBy(() -> executor.execute(transactional(), message("order-1"), () -> {
                    recordEffect("order-1");
                    throw failure;
                }))
                .isSameAs(failure);

        assertThat(effectRows()).isZero();
        assertThat(row("order-1")).isEmpty();
        // So the redelivery runs it again, and this time it commits once.
        HandlerResult<String> retry = executor.execute(transactional(), message("order-1"), () -> {
            recordEffect("order-1");
            return "ok";
        });
        assertThat(retry.outcome()).isEqualTo(MessageOutcome.PROCESSED);
        assertThat(effectRows()).isEqualTo(1);
        assertThat(status("order-1")).isEqualTo(MessageStatus.COMPLETED);
    }

    @Test
    void checkedExceptionOfTheHandlerAlsoRollsBothBack() {
        Exception failure = new Exception("checked failure");

        assertThatThrownBy(() -> executor.execute(transactional(), message("order-1"), () -> {
                    recordEffect("order-1");
                    throw failure;
                }))
                .isSameAs(failure);

        assertThat(effectRows()).isZero();
        assertThat(row("order-1")).isEmpty();
        assertThat(TransactionSynchronizationManager.isActualTransactionActive())
                .isFalse();
    }

    @Test
    void errorThrownByTheHandlerAlsoRollsBothBack() {
        AssertionError failure = new AssertionError("handler bug");

        assertThatThrownBy(() -> executor.execute(transactional(), message("order-1"), () -> {
                    recordEffect("order-1");
                    throw failure;
                }))
                .isSameAs(failure);

        assertThat(effectRows()).isZero();
        assertThat(row("order-1")).isEmpty();
    }

    @Test
    void autoJoinsTheActiveTransactionAndCommitsWithIt() {
        AtomicReference<IdempotencyMode> mode = new AtomicReference<>();

        outerTransaction.executeWithoutResult(status -> {
            try {
                executor.execute(auto(), message("order-1"), () -> {
                    mode.set(IdempotencyContext.current().mode());
                    recordEffect("order-1");
                    return null;
                });
                // Still in the caller's transaction: nothing is committed yet.
                assertThat(ledgerRowsSeenByAnotherConnection()).isZero();
            } catch (Exception ex) {
                throw new IllegalStateException(ex);
            }
        });

        assertThat(mode.get()).isEqualTo(IdempotencyMode.TRANSACTIONAL);
        assertThat(effectRows()).isEqualTo(1);
        assertThat(status("order-1")).isEqualTo(MessageStatus.COMPLETED);
    }

    @Test
    void autoInsideATransactionRolledBackByTheCallerLeavesNoLedgerRow() {
        outerTransaction.executeWithoutResult(status -> {
            try {
                executor.execute(auto(), message("order-1"), () -> {
                    recordEffect("order-1");
                    return null;
                });
            } catch (Exception ex) {
                throw new IllegalStateException(ex);
            }
            // The caller's own work fails after the handler: the message must not look done.
            status.setRollbackOnly();
        });

        assertThat(effectRows()).isZero();
        assertThat(row("order-1")).isEmpty();
    }

    @Test
    void autoOutsideATransactionTakesALease() throws Exception {
        AtomicReference<IdempotencyMode> mode = new AtomicReference<>();
        AtomicReference<MessageStatus> statusDuringHandler = new AtomicReference<>();

        executor.execute(auto(), message("mail-1"), () -> {
            mode.set(IdempotencyContext.current().mode());
            statusDuringHandler.set(status("mail-1"));
            return null;
        });

        assertThat(mode.get()).isEqualTo(IdempotencyMode.LEASE);
        assertThat(statusDuringHandler.get()).isEqualTo(MessageStatus.IN_PROGRESS);
        assertThat(status("mail-1")).isEqualTo(MessageStatus.COMPLETED);
        assertThat(counting.claimAll).hasValue(1);
        assertThat(counting.claimAllCompleted).hasValue(0);
    }

    @Test
    void explicitLeaseModeInsideATransactionStillTakesALeaseVisibleToOthers() {
        AtomicReference<Integer> visibleToOthers = new AtomicReference<>();

        outerTransaction.executeWithoutResult(status -> {
            try {
                executor.execute(lease(), message("mail-1"), () -> {
                    visibleToOthers.set(ledgerRowsSeenByAnotherConnection());
                    return null;
                });
            } catch (Exception ex) {
                throw new IllegalStateException(ex);
            }
        });

        assertThat(visibleToOthers.get()).isEqualTo(1);
        assertThat(status("mail-1")).isEqualTo(MessageStatus.COMPLETED);
    }

    @Test
    void liveLeaseOfTheSameKeyIsBusyInTransactionalMode() throws Exception {
        // A lease-mode consumer of the same namespace holds the key.
        executor.execute(lease(), message("order-1"), () -> {
            assertThatThrownBy(() -> executor.execute(transactional(), message("order-1"), () -> {
                        recordEffect("order-1");
                        return null;
                    }))
                    .isInstanceOf(MessageBusyException.class);
            return null;
        });

        assertThat(effectRows()).isZero();
        assertThat(messages("busy")).isEqualTo(1.0);
    }

    @Test
    void expiredLeaseIsTakenOverAndCompletedInTheTransaction() throws Exception {
        store.claim(consumer, new ClaimRequest("order-1", null), LEASE);
        advance(LEASE);
        AtomicReference<IdempotencyContext> context = new AtomicReference<>();

        HandlerResult<String> result = executor.execute(transactional(), message("order-1"), () -> {
            context.set(IdempotencyContext.current());
            recordEffect("order-1");
            return "ok";
        });

        assertThat(result.outcome()).isEqualTo(MessageOutcome.PROCESSED);
        assertThat(context.get())
                .isEqualTo(new IdempotencyContext("order-1", consumer, 2, IdempotencyMode.TRANSACTIONAL));
        assertThat(status("order-1")).isEqualTo(MessageStatus.COMPLETED);
        assertThat(effectRows()).isEqualTo(1);
    }
}
