package io.sumi.testing;

import io.sumi.store.ClaimRequest;
import io.sumi.store.ClaimResult;
import io.sumi.store.ForwardingProcessedMessageStore;
import io.sumi.store.ProcessedMessage;
import io.sumi.store.ProcessedMessageStore;
import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;

/**
 * A {@link ProcessedMessageStore} that forwards to a real store and counts the round trips the
 * executor and the pruner make, so tests can say "one claim for the whole batch" or "nothing was
 * claimed", and records the size of each claim round trip per consumer ({@link #claims(String)}).
 * Single-message calls go through the batch methods (as the store interface's defaults do), so
 * they are counted as one round trip each.
 */
public final class CountingStore extends ForwardingProcessedMessageStore {

    public record Prune(Instant cutoff, int limit, int deleted) {}

    public final AtomicInteger claimAll = new AtomicInteger();
    public final AtomicInteger claimAllCompleted = new AtomicInteger();
    public final AtomicInteger completeAll = new AtomicInteger();
    public final AtomicInteger releaseAll = new AtomicInteger();
    public final List<Prune> prunes = new CopyOnWriteArrayList<>();

    private final Map<String, List<Integer>> claims = new ConcurrentHashMap<>();

    private final int maxKeyLength;

    public CountingStore(ProcessedMessageStore delegate) {
        this(delegate, delegate.maxKeyLength());
    }

    public CountingStore(ProcessedMessageStore delegate, int maxKeyLength) {
        super(delegate);
        this.maxKeyLength = maxKeyLength;
    }

    /** The sizes of the claim round trips (leased and completed) of {@code consumer}, in order. */
    public List<Integer> claims(String consumer) {
        return claims.computeIfAbsent(consumer, c -> new CopyOnWriteArrayList<>());
    }

    /** Every claim, complete and release call so far. */
    public int roundTrips() {
        return claimAll.get() + claimAllCompleted.get() + completeAll.get() + releaseAll.get();
    }

    @Override
    public int maxKeyLength() {
        return maxKeyLength;
    }

    @Override
    public ClaimResult claim(String consumer, ClaimRequest request, Duration lease) {
        return claimAll(consumer, List.of(request), lease).get(0);
    }

    @Override
    public List<ClaimResult> claimAll(String consumer, List<ClaimRequest> requests, Duration lease) {
        claimAll.incrementAndGet();
        claims(consumer).add(requests.size());
        return super.claimAll(consumer, requests, lease);
    }

    @Override
    public ClaimResult claimCompleted(String consumer, ClaimRequest request) {
        return claimAllCompleted(consumer, List.of(request)).get(0);
    }

    @Override
    public List<ClaimResult> claimAllCompleted(String consumer, List<ClaimRequest> requests) {
        claimAllCompleted.incrementAndGet();
        claims(consumer).add(requests.size());
        return super.claimAllCompleted(consumer, requests);
    }

    @Override
    public boolean complete(ProcessedMessage claim) {
        return completeAll(claim.consumer(), claim.claimToken(), List.of(claim.messageId())) == 1;
    }

    @Override
    public int completeAll(String consumer, long claimToken, Collection<String> messageIds) {
        completeAll.incrementAndGet();
        return super.completeAll(consumer, claimToken, messageIds);
    }

    @Override
    public boolean release(ProcessedMessage claim, @Nullable String error) {
        return releaseAll(claim.consumer(), claim.claimToken(), List.of(claim.messageId()), error) == 1;
    }

    @Override
    public int releaseAll(String consumer, long claimToken, Collection<String> messageIds, @Nullable String error) {
        releaseAll.incrementAndGet();
        return super.releaseAll(consumer, claimToken, messageIds, error);
    }

    @Override
    public int deleteCompletedBefore(Instant cutoff, int limit) {
        int deleted = super.deleteCompletedBefore(cutoff, limit);
        prunes.add(new Prune(cutoff, limit, deleted));
        return deleted;
    }
}
