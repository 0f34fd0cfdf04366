package io.sumi.consumer;

import io.sumi.store.ClaimRequest;
import io.sumi.store.ClaimResult;
import io.sumi.store.ProcessedMessage;
import io.sumi.store.ProcessedMessageStore;
import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;

/**
 * A {@link ProcessedMessageStore} that forwards to a real store and counts the round trips the
 * executor and the pruner make, so tests can say "one claim for the whole batch" or "nothing was
 * claimed".
 */
final class CountingStore implements ProcessedMessageStore {

    record Prune(Instant cutoff, int limit, int deleted) {
    }

    final AtomicInteger claimAll = new AtomicInteger();
    final AtomicInteger claimAllCompleted = new AtomicInteger();
    final AtomicInteger completeAll = new AtomicInteger();
    final AtomicInteger releaseAll = new AtomicInteger();
    final List<Prune> prunes = new CopyOnWriteArrayList<>();

    private final ProcessedMessageStore delegate;
    private final int maxKeyLength;

    CountingStore(ProcessedMessageStore delegate) {
        this(delegate, delegate.maxKeyLength());
    }

    CountingStore(ProcessedMessageStore delegate, int maxKeyLength) {
        this.delegate = delegate;
        this.maxKeyLength = maxKeyLength;
    }

    /** Every claim, complete and release call so far. */
    int roundTrips() {
        return claimAll.get() + claimAllCompleted.get() + completeAll.get() + releaseAll.get();
    }

    @Override
    public int maxKeyLength() {
        return maxKeyLength;
    }

    @Override
    public List<ClaimResult> claimAll(String consumer, List<ClaimRequest> requests, Duration lease) {
        claimAll.incrementAndGet();
        return delegate.claimAll(consumer, requests, lease);
    }

    @Override
    public List<ClaimResult> claimAllCompleted(String consumer, List<ClaimRequest> requests) {
        claimAllCompleted.incrementAndGet();
        return delegate.claimAllCompleted(consumer, requests);
    }

    @Override
    public int completeAll(String consumer, long claimToken, Collection<String> messageIds) {
        completeAll.incrementAndGet();
        return delegate.completeAll(consumer, claimToken, messageIds);
    }

    @Override
    public int releaseAll(String consumer, long claimToken, Collection<String> messageIds, @Nullable String error) {
        releaseAll.incrementAndGet();
        return delegate.releaseAll(consumer, claimToken, messageIds, error);
    }

    @Override
    public Optional<ProcessedMessage> find(String consumer, String messageId) {
        return delegate.find(consumer, messageId);
    }

    @Override
    public int deleteCompletedBefore(Instant cutoff, int limit) {
        int deleted = delegate.deleteCompletedBefore(cutoff, limit);
        prunes.add(new Prune(cutoff, limit, deleted));
        return deleted;
    }

    @Override
    public boolean markForReconciliation(ProcessedMessage claim, @Nullable String reason) {
        return delegate.markForReconciliation(claim, reason);
    }
}
