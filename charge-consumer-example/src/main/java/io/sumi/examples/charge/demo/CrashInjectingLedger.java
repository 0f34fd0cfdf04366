package io.sumi.examples.charge.demo;

import io.sumi.store.ClaimRequest;
import io.sumi.store.ClaimResult;
import io.sumi.store.ProcessedMessage;
import io.sumi.store.ProcessedMessageStore;
import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;

/**
 * The ledger, with crashes: for the keys planned, the first completion "crashes" (throws) after
 * the handler's charge went through, exactly as a JVM dying between the provider's answer and the
 * ledger's {@code COMPLETED}. The claim is neither completed nor released: the redelivery finds it
 * busy until its lease runs out, then takes it over and charges again, with the same key.
 */
public final class CrashInjectingLedger implements ProcessedMessageStore {

    /** Thrown instead of completing: the simulated crash. */
    public static final class SimulatedCrash extends RuntimeException {
        SimulatedCrash(String key) {
            super("simulated crash between the provider call and the ledger's completion of " + key);
        }
    }

    private final ProcessedMessageStore delegate;
    private final Set<String> crashOnce = ConcurrentHashMap.newKeySet();
    private final AtomicInteger crashes = new AtomicInteger();

    public CrashInjectingLedger(ProcessedMessageStore delegate) {
        this.delegate = delegate;
    }

    /** The next completion of {@code key} crashes. */
    public void crashOnce(String key) {
        crashOnce.add(key);
    }

    /** Crashes injected so far. */
    public int crashes() {
        return crashes.get();
    }

    private void maybeCrash(Collection<String> keys) {
        for (String key : keys) {
            if (crashOnce.remove(key)) {
                crashes.incrementAndGet();
                throw new SimulatedCrash(key);
            }
        }
    }

    @Override
    public boolean complete(ProcessedMessage claim) {
        maybeCrash(List.of(claim.messageId()));
        return delegate.complete(claim);
    }

    @Override
    public int completeAll(String consumer, long claimToken, Collection<String> messageIds) {
        maybeCrash(messageIds);
        return delegate.completeAll(consumer, claimToken, messageIds);
    }

    @Override
    public int maxKeyLength() {
        return delegate.maxKeyLength();
    }

    @Override
    public ClaimResult claim(String consumer, ClaimRequest request, Duration lease) {
        return delegate.claim(consumer, request, lease);
    }

    @Override
    public List<ClaimResult> claimAll(String consumer, List<ClaimRequest> requests, Duration lease) {
        return delegate.claimAll(consumer, requests, lease);
    }

    @Override
    public List<ClaimResult> claimAllCompleted(String consumer, List<ClaimRequest> requests) {
        return delegate.claimAllCompleted(consumer, requests);
    }

    @Override
    public boolean release(ProcessedMessage claim, @Nullable String error) {
        return delegate.release(claim, error);
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
