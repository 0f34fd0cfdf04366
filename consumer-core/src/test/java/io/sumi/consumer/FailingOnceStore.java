package io.sumi.consumer;

import io.sumi.store.ClaimRequest;
import io.sumi.store.ClaimResult;
import io.sumi.store.ForwardingProcessedMessageStore;
import io.sumi.store.ProcessedMessage;
import io.sumi.store.ProcessedMessageStore;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jspecify.annotations.Nullable;
import org.springframework.dao.TransientDataAccessResourceException;

/** A ledger whose next claim, completion or release fails once, as a dropped connection would. */
final class FailingOnceStore extends ForwardingProcessedMessageStore {

    final AtomicBoolean failNextClaim = new AtomicBoolean();
    final AtomicBoolean failNextComplete = new AtomicBoolean();
    final AtomicBoolean failNextRelease = new AtomicBoolean();

    FailingOnceStore(ProcessedMessageStore delegate) {
        super(delegate);
    }

    private static void failIf(AtomicBoolean flag, String call) {
        if (flag.compareAndSet(true, false)) {
            throw new TransientDataAccessResourceException("connection lost during " + call);
        }
    }

    @Override
    public ClaimResult claim(String consumer, ClaimRequest request, Duration lease) {
        failIf(failNextClaim, "claim");
        return super.claim(consumer, request, lease);
    }

    @Override
    public List<ClaimResult> claimAll(String consumer, List<ClaimRequest> requests, Duration lease) {
        failIf(failNextClaim, "claimAll");
        return super.claimAll(consumer, requests, lease);
    }

    @Override
    public boolean complete(ProcessedMessage claim) {
        failIf(failNextComplete, "complete");
        return super.complete(claim);
    }

    @Override
    public int completeAll(String consumer, long claimToken, Collection<String> messageIds) {
        failIf(failNextComplete, "completeAll");
        return super.completeAll(consumer, claimToken, messageIds);
    }

    @Override
    public int releaseAll(String consumer, long claimToken, Collection<String> messageIds, @Nullable String error) {
        failIf(failNextRelease, "releaseAll");
        return super.releaseAll(consumer, claimToken, messageIds, error);
    }
}
