package io.sumi.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sumi.consumer.exception.BatchFailedException;
import io.sumi.consumer.exception.MessageBusyException;
import io.sumi.consumer.exception.MissingIdempotencyKeyException;
import io.sumi.store.ClaimRequest;
import io.sumi.store.MessageStatus;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * Batches in transactional mode: the handler's rows and the ledger rows of the batch commit
 * together; when the batch stops at one message, the ones before it are run again in a new
 * transaction and committed, since the failed transaction rolled their rows back.
 */
class TransactionalBatchTests extends H2ExecutorTestSupport {

    private final List<List<Integer>> calls = new CopyOnWriteArrayList<>();

    private static List<InboundMessage> batch(String... keys) {
        List<InboundMessage> messages = new ArrayList<>();
        for (String key : keys) {
            messages.add(message(key));
        }
        return messages;
    }

    /** Writes one business row per message it is given. */
    private IdempotentExecutor.BatchBody writing(List<InboundMessage> batch) {
        return indexes -> {
            calls.add(indexes);
            for (int index : indexes) {
                recordEffect(keyOf(batch.get(index)));
            }
        };
    }

    /** The test messages carry their key in the idempotency-key header. */
    private static String keyOf(InboundMessage message) {
        return (String) message.header(HandlerDefinition.IDEMPOTENCY_KEY_HEADER);
    }

    @Test
    void handlerRowsAndLedgerRowsOfTheBatchCommitTogether() throws Exception {
        List<InboundMessage> batch = batch("a", "b", "c");

        BatchResult result = executor.executeBatch(transactional(), batch, writing(batch));

        assertThat(result).isEqualTo(new BatchResult(3, 0));
        assertThat(calls).containsExactly(List.of(0, 1, 2));
        assertThat(effectKeys()).containsExactly("a", "b", "c");
        assertThat(completedRows()).isEqualTo(3);
        assertThat(counting.claimAllCompleted).as("one claim round trip").hasValue(1);
        assertThat(counting.completeAll).hasValue(0);
    }

    @Test
    void skipsCompletedMessagesAndKeysRepeatedInTheBatch() throws Exception {
        executor.execute(transactional(), message("b"), () -> {
            recordEffect("b");
            return null;
        });
        List<InboundMessage> batch = batch("a", "b", "a", "c");

        BatchResult result = executor.executeBatch(transactional(), batch, writing(batch));

        assertThat(result).isEqualTo(new BatchResult(2, 2));
        assertThat(calls).containsExactly(List.of(0, 3));
        assertThat(effectKeys()).containsExactly("a", "b", "c");
    }

    @Test
    void failureAtAnIndexRerunsTheMessagesBeforeItInANewTransactionAndCommitsThem() throws Exception {
        List<InboundMessage> batch = batch("a", "b", "c", "d");
        IllegalStateException cause = new IllegalStateException("c violates a constraint");

        assertThatThrownBy(() -> executor.executeBatch(transactional(), batch, indexes -> {
                    writing(batch).run(indexes);
                    if (indexes.contains(2)) {
                        throw new BatchFailedException(2, cause);
                    }
                }))
                .isInstanceOfSatisfying(BatchFailedException.class, ex -> {
                    assertThat(ex.index()).isEqualTo(2);
                    assertThat(ex.getCause()).isSameAs(cause);
                });

        assertThat(calls).containsExactly(List.of(0, 1, 2, 3), List.of(0, 1));
        assertThat(effectKeys())
                .as("the first pass rolled back, the second committed")
                .containsExactly("a", "b");
        assertThat(status("a")).isEqualTo(MessageStatus.COMPLETED);
        assertThat(status("b")).isEqualTo(MessageStatus.COMPLETED);
        assertThat(row("c")).isEmpty();
        assertThat(row("d")).isEmpty();
        // The redelivery of the whole batch runs just the tail.
        calls.clear();
        BatchResult redelivery = executor.executeBatch(transactional(), batch, writing(batch));
        assertThat(redelivery).isEqualTo(new BatchResult(2, 2));
        assertThat(calls).containsExactly(List.of(2, 3));
        assertThat(effectKeys()).containsExactly("a", "b", "c", "d");
    }

    @Test
    void failureAtTheFirstMessageCommitsNothingAndRethrowsUnchanged() {
        List<InboundMessage> batch = batch("a", "b");
        BatchFailedException failure = new BatchFailedException(0, new IllegalStateException("a is bad"));

        assertThatThrownBy(() -> executor.executeBatch(transactional(), batch, indexes -> {
                    writing(batch).run(indexes);
                    throw failure;
                }))
                .isSameAs(failure);

        assertThat(calls).hasSize(1);
        assertThat(effectRows()).isZero();
        assertThat(ledgerRows()).isZero();
    }

    @Test
    void otherExceptionRollsBackTheWholeBatchAndPropagatesUnchanged() {
        List<InboundMessage> batch = batch("a", "b", "c");
        Exception failure = new Exception("checked, for the whole batch");

        assertThatThrownBy(() -> executor.executeBatch(transactional(), batch, indexes -> {
                    writing(batch).run(indexes);
                    throw failure;
                }))
                .isSameAs(failure);

        assertThat(calls).hasSize(1);
        assertThat(effectRows()).isZero();
        assertThat(ledgerRows()).isZero();
    }

    @Test
    void missingKeyAtAnIndexCommitsTheMessagesBeforeIt() throws Exception {
        List<InboundMessage> batch = new ArrayList<>(batch("a", "b"));
        batch.add(withHeaders("no key"));
        batch.add(message("d"));

        assertThatThrownBy(() -> executor.executeBatch(transactional(), batch, writing(batch)))
                .isInstanceOfSatisfying(
                        BatchFailedException.class, ex -> assertThat(ex.index()).isEqualTo(2))
                .hasCauseInstanceOf(MissingIdempotencyKeyException.class);

        assertThat(calls).containsExactly(List.of(0, 1));
        assertThat(effectKeys()).containsExactly("a", "b");
        assertThat(completedRows()).isEqualTo(2);
    }

    @Test
    void liveLeaseOnAMessageCommitsTheOnesBeforeIt() throws Exception {
        store.claim(consumer, new ClaimRequest("c", null), LEASE);
        List<InboundMessage> batch = batch("a", "b", "c", "d");

        assertThatThrownBy(() -> executor.executeBatch(transactional(), batch, writing(batch)))
                .isInstanceOfSatisfying(
                        BatchFailedException.class, ex -> assertThat(ex.index()).isEqualTo(2))
                .hasCauseInstanceOf(MessageBusyException.class);

        assertThat(calls)
                .as("the first pass saw the live claim before running anything")
                .containsExactly(List.of(0, 1));
        assertThat(effectKeys()).containsExactly("a", "b");
        assertThat(status("c")).isEqualTo(MessageStatus.IN_PROGRESS);
        assertThat(row("d")).as("the claim of d was rolled back").isEmpty();
    }

    @Test
    void failureInsideTheCallersTransactionDoesNotReportTheEarlierMessagesDone() {
        // AUTO joins the caller's transaction. When one message fails, the executor cannot commit
        // "the ones before" on its own: everything of the batch lives in the caller's transaction,
        // which the failure marks rollback-only. Saying "index 2" would let the binder acknowledge
        // a and b although their rows are rolled back with the caller's transaction.
        List<InboundMessage> batch = batch("a", "b", "c", "d");
        IllegalStateException cause = new IllegalStateException("c violates a constraint");
        List<BatchFailedException> thrown = new ArrayList<>();

        assertThatThrownBy(() -> outerTransaction.executeWithoutResult(status -> {
                    try {
                        executor.executeBatch(auto(), batch, indexes -> {
                            writing(batch).run(indexes);
                            if (indexes.contains(2)) {
                                throw new BatchFailedException(2, cause);
                            }
                        });
                    } catch (BatchFailedException ex) {
                        thrown.add(ex);
                        throw ex;
                    } catch (Exception ex) {
                        throw new IllegalStateException(ex);
                    }
                }))
                .isInstanceOf(BatchFailedException.class);

        assertThat(effectRows()).isZero();
        assertThat(ledgerRows()).isZero();
        assertThat(thrown).singleElement().satisfies(ex -> {
            assertThat(ex.index()).as("no message of the batch is done").isZero();
            assertThat(ex.getCause()).isSameAs(cause);
        });
    }

    @Test
    void liveLeaseInsideTheCallersTransactionStopsTheBatchAtIndexZero() {
        store.claim(consumer, new ClaimRequest("c", null), LEASE);
        List<InboundMessage> batch = batch("a", "b", "c", "d");
        List<BatchFailedException> thrown = new ArrayList<>();

        assertThatThrownBy(() -> outerTransaction.executeWithoutResult(status -> {
                    try {
                        executor.executeBatch(auto(), batch, writing(batch));
                    } catch (BatchFailedException ex) {
                        thrown.add(ex);
                        throw ex;
                    } catch (Exception ex) {
                        throw new IllegalStateException(ex);
                    }
                }))
                .isInstanceOf(BatchFailedException.class);

        assertThat(calls).isEmpty();
        assertThat(thrown).singleElement().satisfies(ex -> {
            assertThat(ex.index()).isZero();
            assertThat(ex.getCause()).isInstanceOf(MessageBusyException.class).hasMessageContaining("'c'");
        });
        assertThat(effectRows()).isZero();
        assertThat(ledgerRows()).as("only the other consumer's claim").isEqualTo(1);
    }

    @Test
    void batchInsideTheCallersTransactionCommitsWithIt() throws Exception {
        List<InboundMessage> batch = batch("a", "b");

        outerTransaction.executeWithoutResult(status -> {
            try {
                executor.executeBatch(auto(), batch, writing(batch));
                assertThat(ledgerRowsSeenByAnotherConnection()).isZero();
            } catch (Exception ex) {
                throw new IllegalStateException(ex);
            }
        });

        assertThat(effectKeys()).containsExactly("a", "b");
        assertThat(completedRows()).isEqualTo(2);
    }
}
