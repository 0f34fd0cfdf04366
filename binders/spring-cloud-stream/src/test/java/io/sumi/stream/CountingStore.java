package io.sumi.stream;

import io.sumi.store.ClaimRequest;
import io.sumi.store.ClaimResult;
import io.sumi.store.ForwardingProcessedMessageStore;
import io.sumi.store.ProcessedMessageStore;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

/** A store that forwards to the real one and records each claim round trip per consumer (its size), so tests can count them. */
final class CountingStore extends ForwardingProcessedMessageStore {

    private final Map<String, List<Integer>> claims = new ConcurrentHashMap<>();

    CountingStore(ProcessedMessageStore delegate) {
        super(delegate);
    }

    /** The sizes of the claim round trips of {@code consumer}, in order. */
    List<Integer> claims(String consumer) {
        return claims.computeIfAbsent(consumer, c -> new CopyOnWriteArrayList<>());
    }

    @Override
    public ClaimResult claim(String consumer, ClaimRequest request, Duration lease) {
        return claimAll(consumer, List.of(request), lease).get(0);
    }

    @Override
    public ClaimResult claimCompleted(String consumer, ClaimRequest request) {
        return claimAllCompleted(consumer, List.of(request)).get(0);
    }

    @Override
    public List<ClaimResult> claimAll(String consumer, List<ClaimRequest> requests, Duration lease) {
        claims(consumer).add(requests.size());
        return super.claimAll(consumer, requests, lease);
    }

    @Override
    public List<ClaimResult> claimAllCompleted(String consumer, List<ClaimRequest> requests) {
        claims(consumer).add(requests.size());
        return super.claimAllCompleted(consumer, requests);
    }
}
