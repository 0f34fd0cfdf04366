package io.sumi.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sumi.store.ClaimRequest;
import io.sumi.store.ClaimResult;
import io.sumi.store.ForwardingProcessedMessageStore;
import io.sumi.store.ProcessedMessage;
import io.sumi.store.ProcessedMessageStore;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.dao.TransientDataAccessResourceException;

/**
 * {@code sumi.messages} counts a message whose ledger call fails once, as {@code failed}, in lease
 * mode as in transactional mode: a dropped connection must not make messages vanish from the
 * counts (before, a lease-mode claim or completion that threw counted nothing).
 */
class LedgerFailureMetricsTests extends H2ExecutorTestSupport {

    static final class FailingStore extends ForwardingProcessedMessageStore {

        final AtomicBoolean failClaim = new AtomicBoolean();
        final AtomicBoolean failComplete = new AtomicBoolean();

        FailingStore(ProcessedMessageStore delegate) {
            super(delegate);
        }

        @Override
        public List<ClaimResult> claimAll(String consumer, List<ClaimRequest> requests, Duration lease) {
            if (failClaim.get()) {
                throw new TransientDataAccessResourceException("connection lost during claimAll");
            }
            return super.claimAll(consumer, requests, lease);
        }

        @Override
        public ClaimResult claim(String consumer, ClaimRequest request, Duration lease) {
            if (failClaim.get()) {
                throw new TransientDataAccessResourceException("connection lost during claim");
            }
            return super.claim(consumer, request, lease);
        }

        @Override
        public boolean complete(ProcessedMessage claim) {
            if (failComplete.get()) {
                throw new TransientDataAccessResourceException("connection lost during complete");
            }
            return super.complete(claim);
        }

        @Override
        public int completeAll(String consumer, long claimToken, Collection<String> messageIds) {
            if (failComplete.get()) {
                throw new TransientDataAccessResourceException("connection lost during completeAll");
            }
            return super.completeAll(consumer, claimToken, messageIds);
        }
    }

    FailingStore failing;
    IdempotentExecutor failingExecutor;

    @BeforeEach
    void failingStore() {
        failing = new FailingStore(store);
        failingExecutor = IdempotentExecutor.builder(failing).meterRegistry(meters).build();
    }

    @Test
    void aLeaseClaimThatFailsCountsTheMessageFailedOnce() {
        failing.failClaim.set(true);

        assertThatThrownBy(() -> failingExecutor.execute(lease(), message("a"), () -> null))
                .isInstanceOf(TransientDataAccessResourceException.class);

        assertThat(outcomes()).containsExactlyEntriesOf(Map.of("failed", 1.0));
    }

    @Test
    void aLeaseCompletionThatFailsCountsTheMessageFailedOnceNotProcessed() {
        failing.failComplete.set(true);

        assertThatThrownBy(() -> failingExecutor.execute(lease(), message("a"), () -> null))
                .isInstanceOf(TransientDataAccessResourceException.class);

        assertThat(outcomes()).containsExactlyEntriesOf(Map.of("failed", 1.0));
    }

    @Test
    void aLeaseBatchWhoseClaimFailsCountsOneFailure() {
        failing.failClaim.set(true);

        assertThatThrownBy(() -> failingExecutor.executeBatch(lease(), List.of(message("a"), message("b")), indexes -> {
        })).isInstanceOf(TransientDataAccessResourceException.class);

        assertThat(outcomes()).containsExactlyEntriesOf(Map.of("failed", 1.0));
    }

    private Map<String, Double> outcomes() {
        Map<String, Double> counts = new TreeMap<>();
        meters.find("sumi.messages").tag("consumer", consumer).counters()
                .forEach(counter -> counts.put(counter.getId().getTag("outcome"), counter.count()));
        return counts;
    }
}
