package io.sumi.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sumi.consumer.exception.BatchFailedException;
import io.sumi.consumer.exception.FingerprintMismatchException;
import io.sumi.consumer.exception.IdempotencyException;
import io.sumi.consumer.exception.InvalidIdempotencyKeyException;
import io.sumi.consumer.exception.MessageBusyException;
import io.sumi.consumer.exception.MissingIdempotencyKeyException;
import io.sumi.store.ClaimRequest;
import io.sumi.store.MessageStatus;
import io.sumi.store.ProcessedMessage;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * Batches in lease mode: one claim round trip, duplicates skipped, and a failure at one message
 * completes the ones before it and gives back the rest.
 */
class LeaseBatchTests extends H2ExecutorTestSupport {

    private final List<List<Integer>> calls = new CopyOnWriteArrayList<>();

    private IdempotentExecutor.BatchBody recording() {
        return indexes -> calls.add(indexes);
    }

    private static List<InboundMessage> batch(String... keys) {
        List<InboundMessage> messages = new ArrayList<>();
        for (String key : keys) {
            messages.add(message(key));
        }
        return messages;
    }

    @Test
    void claimsTheWholeBatchInOneRoundTripAndCompletesItInAnother() throws Exception {
        BatchResult result = executor.executeBatch(lease(), batch("a", "b", "c", "d"), recording());

        assertThat(result).isEqualTo(new BatchResult(4, 0));
        assertThat(calls).containsExactly(List.of(0, 1, 2, 3));
        assertThat(counting.claimAll).hasValue(1);
        assertThat(counting.completeAll).hasValue(1);
        assertThat(counting.releaseAll).hasValue(0);
        assertThat(completedRows()).isEqualTo(4);
    }

    @Test
    void skipsCompletedMessagesAndKeysRepeatedInTheBatch() throws Exception {
        executor.execute(lease(), message("b"), () -> null);

        BatchResult result = executor.executeBatch(lease(), batch("a", "b", "a", "c", "c"), recording());

        assertThat(calls).containsExactly(List.of(0, 3));
        assertThat(result).isEqualTo(new BatchResult(2, 3));
        assertThat(completedRows()).isEqualTo(3);
    }

    @Test
    void batchOfDuplicatesDoesNotCallTheHandler() throws Exception {
        executor.executeBatch(lease(), batch("a", "b"), recording());

        BatchResult again = executor.executeBatch(lease(), batch("b", "a"), recording());

        assertThat(again).isEqualTo(new BatchResult(0, 2));
        assertThat(calls).hasSize(1);
    }

    @Test
    void emptyBatchDoesNothing() throws Exception {
        BatchResult result = executor.executeBatch(lease(), List.of(), recording());

        assertThat(result).isEqualTo(new BatchResult(0, 0));
        assertThat(calls).isEmpty();
        assertThat(counting.roundTrips()).isZero();
    }

    @Test
    void failureAtOneMessageCompletesTheOnesBeforeAndReleasesTheRest() throws Exception {
        IllegalStateException cause = new IllegalStateException("mail server refused c");
        BatchFailedException failure = new BatchFailedException(2, cause);

        assertThatThrownBy(() -> executor.executeBatch(lease(), batch("a", "b", "c", "d"), indexes -> {
                    calls.add(indexes);
                    throw failure;
                }))
                .isSameAs(failure);

        assertThat(status("a")).isEqualTo(MessageStatus.COMPLETED);
        assertThat(status("b")).isEqualTo(MessageStatus.COMPLETED);
        for (String released : List.of("c", "d")) {
            ProcessedMessage row = row(released).orElseThrow();
            assertThat(row.status()).isEqualTo(MessageStatus.IN_PROGRESS);
            assertReleasedAtOnce(row);
            assertThat(row.lastError()).contains("mail server refused c");
        }
        // The redelivery of the tail runs at once, as second attempts.
        calls.clear();
        BatchResult redelivery = executor.executeBatch(lease(), batch("a", "b", "c", "d"), recording());
        assertThat(calls).containsExactly(List.of(2, 3));
        assertThat(redelivery).isEqualTo(new BatchResult(2, 2));
        assertThat(row("c").orElseThrow().attempts()).isEqualTo(2);
        assertThat(completedRows()).isEqualTo(4);
    }

    @Test
    void aBatchThatLostALeaseToATakerThatFailedStopsAtThatMessage() throws Exception {
        HandlerDefinition definition =
                definition(IdempotencyMode.LEASE).lease(Duration.ofSeconds(30)).build();

        assertThatThrownBy(() -> executor.executeBatch(definition, batch("a", "b", "c"), indexes -> {
                    calls.add(indexes);
                    // The batch is slow: its leases run out, a redelivery of b on another consumer takes b over and
                    // fails.
                    advance(Duration.ofSeconds(31));
                    Exception taker = deliverElsewhere(definition, "b", () -> {
                        throw new IllegalStateException("provider down");
                    });
                    assertThat(taker).hasMessage("provider down");
                }))
                .isInstanceOfSatisfying(BatchFailedException.class, stopped -> {
                    // a is done and acked; b is not COMPLETED, so it and what follows come again.
                    assertThat(stopped.index()).isEqualTo(1);
                    assertThat(stopped.getCause())
                            .isInstanceOf(MessageBusyException.class)
                            .hasMessageContaining("was lost to another consumer before completion");
                });

        assertThat(status("a")).isEqualTo(MessageStatus.COMPLETED);
        assertThat(status("b")).isEqualTo(MessageStatus.IN_PROGRESS);
        assertThat(status("c")).isEqualTo(MessageStatus.COMPLETED);
        calls.clear();
        BatchResult redelivery = executor.executeBatch(definition, batch("b", "c"), recording());
        assertThat(calls).containsExactly(List.of(0));
        assertThat(redelivery).isEqualTo(new BatchResult(1, 1));
    }

    @Test
    void failureIndexCountsDuplicatesInTheBatch() throws Exception {
        executor.execute(lease(), message("b"), () -> null);
        BatchFailedException failure = new BatchFailedException(3, new IllegalStateException("d failed"));

        assertThatThrownBy(() -> executor.executeBatch(lease(), batch("a", "b", "c", "d", "e"), indexes -> {
                    calls.add(indexes);
                    throw failure;
                }))
                .isSameAs(failure);

        assertThat(calls).containsExactly(List.of(0, 2, 3, 4));
        assertThat(status("a")).isEqualTo(MessageStatus.COMPLETED);
        assertThat(status("c")).isEqualTo(MessageStatus.COMPLETED);
        assertReleasedAtOnce(row("d").orElseThrow());
        assertReleasedAtOnce(row("e").orElseThrow());
    }

    @Test
    void otherExceptionFailsTheWholeBatchAndReleasesEveryClaim() {
        IllegalStateException failure = new IllegalStateException("provider down");

        assertThatThrownBy(() -> executor.executeBatch(lease(), batch("a", "b", "c"), indexes -> {
                    throw failure;
                }))
                .isSameAs(failure);

        assertThat(completedRows()).isZero();
        for (String key : List.of("a", "b", "c")) {
            assertReleasedAtOnce(row(key).orElseThrow());
        }
        assertThat(counting.releaseAll).hasValue(1);
    }

    @Test
    void missingKeyAtAnIndexProcessesTheMessagesBeforeItAndFailsThere() throws Exception {
        List<InboundMessage> batch = new ArrayList<>(batch("a", "b"));
        batch.add(withHeaders("no key here"));
        batch.add(message("d"));

        assertThatThrownBy(() -> executor.executeBatch(lease(), batch, recording()))
                .isInstanceOfSatisfying(BatchFailedException.class, ex -> {
                    assertThat(ex.index()).isEqualTo(2);
                    assertThat(ex.getCause()).isInstanceOf(MissingIdempotencyKeyException.class);
                });

        assertThat(calls).containsExactly(List.of(0, 1));
        assertThat(status("a")).isEqualTo(MessageStatus.COMPLETED);
        assertThat(status("b")).isEqualTo(MessageStatus.COMPLETED);
        assertThat(row("d")).as("nothing after the bad message is claimed").isEmpty();
        assertThat(messages("rejected")).isEqualTo(1.0);
    }

    @Test
    void missingKeyAtTheFirstMessageRunsNothing() {
        List<InboundMessage> batch = List.of(withHeaders("no key"), message("b"));

        assertThatThrownBy(() -> executor.executeBatch(lease(), batch, recording()))
                .isInstanceOfSatisfying(
                        BatchFailedException.class, ex -> assertThat(ex.index()).isZero())
                .hasCauseInstanceOf(MissingIdempotencyKeyException.class);

        assertThat(calls).isEmpty();
        assertThat(ledgerRows()).isZero();
    }

    @Test
    void tooLongKeyAtAnIndexStopsTheBatchThere() throws Exception {
        List<InboundMessage> batch = batch("a", "k".repeat(201), "c");

        assertThatThrownBy(() -> executor.executeBatch(lease(), batch, recording()))
                .isInstanceOfSatisfying(
                        BatchFailedException.class, ex -> assertThat(ex.index()).isEqualTo(1))
                .hasCauseInstanceOf(InvalidIdempotencyKeyException.class);

        assertThat(calls).containsExactly(List.of(0));
        assertThat(ledgerRows()).isEqualTo(1);
    }

    @Test
    void liveClaimElsewhereStopsTheBatchThereAndGivesBackTheClaimsAfterIt() throws Exception {
        store.claim(consumer, new ClaimRequest("c", Fingerprints.of("payload of c")), LEASE);

        assertThatThrownBy(() -> executor.executeBatch(lease(), batch("a", "b", "c", "d"), recording()))
                .isInstanceOfSatisfying(BatchFailedException.class, ex -> {
                    assertThat(ex.index()).isEqualTo(2);
                    assertThat(ex.getCause()).isInstanceOf(MessageBusyException.class);
                    assertThat(((IdempotencyException) ex.getCause()).isRetryable())
                            .isTrue();
                });

        assertThat(calls).containsExactly(List.of(0, 1));
        assertThat(completedRows()).isEqualTo(2);
        ProcessedMessage other = row("c").orElseThrow();
        assertThat(other.leaseUntil())
                .as("the other consumer's claim is untouched")
                .isEqualTo(other.firstSeenAt().plus(LEASE));
        // d was claimed with the batch and never run: given back without counting an attempt (its
        // row, which that claim created, is gone), so a redelivery claims it at once as a first claim.
        assertThat(row("d")).isEmpty();
        assertThat(messages("busy")).isEqualTo(1.0);
        assertThat(messages("processed")).isEqualTo(2.0);
    }

    @Test
    void rejectedFingerprintStopsTheBatchThere() throws Exception {
        HandlerDefinition handler = definition(IdempotencyMode.LEASE)
                .fingerprintPolicy(FingerprintMismatchPolicy.REJECT)
                .build();
        executor.execute(handler, message("b", "first payload"), () -> null);

        assertThatThrownBy(() -> executor.executeBatch(
                        handler, List.of(message("a"), message("b", "other payload"), message("c")), recording()))
                .isInstanceOfSatisfying(
                        BatchFailedException.class, ex -> assertThat(ex.index()).isEqualTo(1))
                .hasCauseInstanceOf(FingerprintMismatchException.class);

        assertThat(calls).containsExactly(List.of(0));
        assertThat(status("a")).isEqualTo(MessageStatus.COMPLETED);
        assertThat(row("c")).as("never run: given back, no row left").isEmpty();
        assertThat(counter("sumi.fingerprint.mismatches")).isEqualTo(1.0);
    }

    @Test
    void warnedFingerprintCountsAndSkipsAsADuplicate() throws Exception {
        executor.execute(lease(), message("b", "first payload"), () -> null);

        BatchResult result =
                executor.executeBatch(lease(), List.of(message("a"), message("b", "other payload")), recording());

        assertThat(result).isEqualTo(new BatchResult(1, 1));
        assertThat(calls).containsExactly(List.of(0));
        assertThat(counter("sumi.fingerprint.mismatches")).isEqualTo(1.0);
    }
}
