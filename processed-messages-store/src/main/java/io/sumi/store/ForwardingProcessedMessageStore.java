package io.sumi.store;

import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * A {@link ProcessedMessageStore} that forwards every call to another store: the base of store
 * decorators (caches, metrics, fault injection in tests), which override only what they change.
 * Every method forwards, the defaults of the SPI included, so a decorator never silently replaces
 * the delegate's own implementation of a default method.
 */
public abstract class ForwardingProcessedMessageStore implements ProcessedMessageStore {

    private final ProcessedMessageStore delegate;

    protected ForwardingProcessedMessageStore(ProcessedMessageStore delegate) {
        this.delegate = Objects.requireNonNull(delegate, "delegate");
    }

    /** The store calls are forwarded to. */
    public ProcessedMessageStore delegate() {
        return delegate;
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
    public ClaimResult claimCompleted(String consumer, ClaimRequest request) {
        return delegate.claimCompleted(consumer, request);
    }

    @Override
    public List<ClaimResult> claimAllCompleted(String consumer, List<ClaimRequest> requests) {
        return delegate.claimAllCompleted(consumer, requests);
    }

    @Override
    public boolean complete(ProcessedMessage claim) {
        return delegate.complete(claim);
    }

    @Override
    public boolean complete(ProcessedMessage claim, @Nullable StoredReply reply) {
        return delegate.complete(claim, reply);
    }

    @Override
    public boolean storeReply(ProcessedMessage claim, StoredReply reply) {
        return delegate.storeReply(claim, reply);
    }

    @Override
    public Optional<StoredReply> findReply(String consumer, String messageId) {
        return delegate.findReply(consumer, messageId);
    }

    @Override
    public int completeAll(String consumer, long claimToken, Collection<String> messageIds) {
        return delegate.completeAll(consumer, claimToken, messageIds);
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
    public int releaseUnrun(String consumer, long claimToken, Collection<String> messageIds) {
        return delegate.releaseUnrun(consumer, claimToken, messageIds);
    }

    @Override
    public boolean renew(ProcessedMessage claim, Duration lease) {
        return delegate.renew(claim, lease);
    }

    @Override
    public int renewAll(String consumer, long claimToken, Collection<String> messageIds, Duration lease) {
        return delegate.renewAll(consumer, claimToken, messageIds, lease);
    }

    @Override
    public boolean markForReconciliation(ProcessedMessage claim, @Nullable String reason) {
        return delegate.markForReconciliation(claim, reason);
    }

    @Override
    public boolean completeReconciled(String consumer, String messageId) {
        return delegate.completeReconciled(consumer, messageId);
    }

    @Override
    public boolean releaseReconciled(String consumer, String messageId) {
        return delegate.releaseReconciled(consumer, messageId);
    }

    @Override
    public Optional<ProcessedMessage> find(String consumer, String messageId) {
        return delegate.find(consumer, messageId);
    }

    @Override
    public int deleteCompletedBefore(Instant cutoff, int limit) {
        return delegate.deleteCompletedBefore(cutoff, limit);
    }

    @Override
    public Map<String, ConsumerLedgerStats> consumerStats() {
        return delegate.consumerStats();
    }
}
