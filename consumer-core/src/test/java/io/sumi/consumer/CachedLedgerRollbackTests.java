package io.sumi.consumer;

import static org.assertj.core.api.Assertions.assertThat;

import io.sumi.store.CachingProcessedMessageStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The executor over the Caffeine front cache, inside the caller's own transaction: the cache may
 * only remember what is committed. A key repeated within one transaction is a DUPLICATE of the
 * transaction's own uncommitted row; after a rollback the ledger has no row, and neither may the
 * cache (before the fix it answered DUPLICATE for an hour and the message was never run).
 */
class CachedLedgerRollbackTests extends H2ExecutorTestSupport {

    CachingProcessedMessageStore cache;
    IdempotentExecutor cachedExecutor;

    @BeforeEach
    void cachedExecutor() {
        cache = new CachingProcessedMessageStore(counting, 1_000, Duration.ofHours(1));
        cachedExecutor = IdempotentExecutor.builder(cache)
                .transactionSupport(TransactionSupport.of(transactionManager))
                .meterRegistry(meters)
                .build();
    }

    @Test
    void aKeyRepeatedInOneRolledBackTransactionIsNotRememberedAsDone() throws Exception {
        List<MessageOutcome> outcomes = new ArrayList<>();
        // A @Transactional service method that loops over messages with a repeated key, then rolls back.
        outerTransaction.executeWithoutResult(status -> {
            for (String key : List.of("order-1", "order-1", "order-2")) {
                try {
                    outcomes.add(cachedExecutor
                            .execute(auto(), message(key), () -> {
                                recordEffect(key);
                                return null;
                            })
                            .outcome());
                } catch (Exception ex) {
                    throw new IllegalStateException(ex);
                }
            }
            status.setRollbackOnly();
        });
        assertThat(outcomes)
                .containsExactly(MessageOutcome.PROCESSED, MessageOutcome.DUPLICATE, MessageOutcome.PROCESSED);
        assertThat(ledgerRows()).isZero();
        assertThat(effectRows()).isZero();

        // The redelivery, in a transaction and in lease mode: each key runs again, once.
        HandlerResult<Object> redelivered = outerTransaction.execute(status -> {
            try {
                return cachedExecutor.execute(auto(), message("order-1"), () -> {
                    recordEffect("order-1");
                    return "again";
                });
            } catch (Exception ex) {
                throw new IllegalStateException(ex);
            }
        });
        HandlerResult<Object> leased = cachedExecutor.execute(lease(), message("order-2"), () -> {
            recordEffect("order-2");
            return "again";
        });

        assertThat(redelivered.outcome()).isEqualTo(MessageOutcome.PROCESSED);
        assertThat(leased.outcome()).isEqualTo(MessageOutcome.PROCESSED);
        assertThat(effectKeys()).containsExactly("order-1", "order-2");
        assertThat(completedRows()).isEqualTo(2);
        assertThat(cache.size()).as("both, once committed").isEqualTo(2);
    }

    @Test
    void aKeyRepeatedInOneCommittedTransactionIsRememberedAfterTheCommit() throws Exception {
        outerTransaction.executeWithoutResult(status -> {
            for (int i = 0; i < 2; i++) {
                try {
                    cachedExecutor.execute(auto(), message("order-1"), () -> {
                        recordEffect("order-1");
                        return null;
                    });
                } catch (Exception ex) {
                    throw new IllegalStateException(ex);
                }
            }
            assertThat(cache.size()).as("not before the commit").isZero();
        });

        assertThat(cache.size()).isOne();
        int claimsBefore = counting.roundTrips();
        assertThat(cachedExecutor
                        .execute(lease(), message("order-1"), () -> "never")
                        .outcome())
                .isEqualTo(MessageOutcome.DUPLICATE);
        assertThat(counting.roundTrips()).as("answered by the cache").isEqualTo(claimsBefore);
        assertThat(effectRows()).isOne();
    }
}
