package io.sumi.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sumi.consumer.exception.BatchFailedException;
import io.sumi.store.ClaimRequest;
import io.sumi.store.MessageStatus;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Lease-mode batches give back every claim they took, even when a ledger call fails on the way
 * (issue 8, defect 7): a claim left leased makes every redelivery BUSY for the whole lease.
 */
class LeaseBatchLeakTests extends H2ExecutorTestSupport {

    FailingOnceStore failing;
    IdempotentExecutor leaky;
    final List<List<Integer>> calls = new ArrayList<>();

    @BeforeEach
    void failingStore() {
        failing = new FailingOnceStore(store);
        leaky = IdempotentExecutor.builder(failing).meterRegistry(meters).build();
    }

    static List<InboundMessage> batch(String... keys) {
        List<InboundMessage> messages = new ArrayList<>();
        for (String key : keys) {
            messages.add(message(key));
        }
        return messages;
    }

    /** The redelivery of the keys is not BUSY: each runs or is a duplicate, and all end COMPLETED. */
    void redeliveryRunsEveryKey(String... keys) throws Exception {
        BatchResult result = leaky.executeBatch(lease(), batch(keys), calls::add);
        assertThat(result.processed() + result.duplicates()).isEqualTo(keys.length);
        for (String key : keys) {
            assertThat(status(key)).isEqualTo(MessageStatus.COMPLETED);
        }
    }

    @Test
    void aFailedReleaseOfTheClaimsAfterAStopLeavesNoKeyLeased() throws Exception {
        // "b" is held by another consumer's live claim: the batch stops there, and "a" and "c" were claimed.
        store.claim(consumer, new ClaimRequest("b", "payload of b"), LEASE);
        failing.failNextRelease.set(true);

        assertThatThrownBy(() -> leaky.executeBatch(lease(), batch("a", "b", "c"), calls::add));

        // b's holder finishes; the redelivery of a, b, c must not be BUSY for a or c.
        store.completeAll(consumer, row("b").orElseThrow().claimToken(), List.of("b"));
        calls.clear();
        BatchResult result = leaky.executeBatch(lease(), batch("a", "b", "c"), calls::add);
        assertThat(calls).hasSize(1);
        assertThat(result.processed() + result.duplicates()).isEqualTo(3);
        assertThat(status("a")).isEqualTo(MessageStatus.COMPLETED);
        assertThat(status("c")).isEqualTo(MessageStatus.COMPLETED);
    }

    @Test
    void aFailedReleaseAfterAHandlerFailureAtAnIndexLeavesNoKeyLeased() throws Exception {
        failing.failNextRelease.set(true);
        IllegalStateException cause = new IllegalStateException("b failed");

        assertThatThrownBy(() -> leaky.executeBatch(lease(), batch("a", "b", "c"), indexes -> {
                    throw new BatchFailedException(1, cause);
                }))
                .isInstanceOf(BatchFailedException.class);

        assertThat(status("a")).isEqualTo(MessageStatus.COMPLETED);
        redeliveryRunsEveryKey("b", "c");
    }

    @Test
    void aFailedCompleteAllAfterAHandlerFailureAtAnIndexStillReleasesTheFailedKeys() throws Exception {
        failing.failNextComplete.set(true);
        IllegalStateException cause = new IllegalStateException("b failed");

        assertThatThrownBy(() -> leaky.executeBatch(lease(), batch("a", "b", "c"), indexes -> {
            throw new BatchFailedException(1, cause);
        }));

        redeliveryRunsEveryKey("a", "b", "c");
    }

    @Test
    void aFailedCompleteAllAfterASuccessfulBatchLeavesNoKeyLeased() throws Exception {
        failing.failNextComplete.set(true);

        // Either the completion is retried (the keys are done) or the keys are released (they run
        // again, with the same idempotency key): never left leased.
        try {
            leaky.executeBatch(lease(), batch("a", "b"), calls::add);
        } catch (RuntimeException expected) {
            assertThat(expected).hasMessageContaining("completeAll");
        }

        redeliveryRunsEveryKey("a", "b");
    }
}
