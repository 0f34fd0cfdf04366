package io.sumi.stream;

import io.sumi.store.ClaimRequest;
import io.sumi.store.ClaimResult;
import io.sumi.store.ProcessedMessage;
import io.sumi.store.ProcessedMessageStore;
import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.jspecify.annotations.Nullable;

/** A store that forwards to the real one and records each claim round trip per consumer (its size), so tests can count them. */
final class CountingStore implements ProcessedMessageStore {

    private final ProcessedMessageStore delegate;
    private final Map<String, List<Integer>> claims = new ConcurrentHashMap<>();

    CountingStore(ProcessedMessageStore delegate) {
        this.delegate = delegate;
    }

    /** The sizes of the claim round trips of {@code consumer}, in order. */
    List<Integer> claims(String consumer) {
        return claims.computeIfAbsent(consumer, c -> new CopyOnWriteArrayList<>());
    }

    @Override
    public int maxKeyLength() {
        return delegate.maxKeyLength();
    }

    @Override
    public List<ClaimResult> claimAll(String consumer, List<ClaimRequest> requests, Duration lease) {
        claims(consumer).add(requests.size());
        return delegate.claimAll(consumer, requests, lease);
    }

    @Override
    public List<ClaimResult> claimAllCompleted(String consumer, List<ClaimRequest> requests) {
        claims(consumer).add(requests.size());
        return delegate.claimAllCompleted(consumer, requests);
    }

    @Override
    public int completeAll(String consumer, long claimToken, Collection<String> messageIds) {
        return delegate.completeAll(consumer, claimToken, messageIds);
    }

    @Override
    public int releaseAll(String consumer, long claimToken, Collection<String> messageIds, @Nullable String error) {
        return delegate.releaseAll(consumer, claimToken, messageIds, error);
    }

    @Override
    public boolean markForReconciliation(ProcessedMessage claim, @Nullable String reason) {
        return delegate.markForReconciliation(claim, reason);
    }

    @Override
    public Optional<ProcessedMessage> find(String consumer, String messageId) {
        return delegate.find(consumer, messageId);
    }

    @Override
    public int deleteCompletedBefore(Instant cutoff, int limit) {
        return delegate.deleteCompletedBefore(cutoff, limit);
    }
}
