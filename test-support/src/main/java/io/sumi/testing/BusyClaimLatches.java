package io.sumi.testing;

import io.sumi.store.ClaimOutcome;
import io.sumi.store.ClaimRequest;
import io.sumi.store.ClaimResult;
import io.sumi.store.ForwardingProcessedMessageStore;
import io.sumi.store.ProcessedMessageStore;
import java.time.Duration;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * A ledger that opens a latch per consumer and key the first time a claim of that key is told
 * {@link ClaimOutcome#BUSY}: a copy of the message met a handler still running it. A concurrent
 * duplicates test's handler waits on it ({@link #awaitBusy}) to force the interleaving it is
 * about (the copy arrives while the first run is in its handler) instead of sleeping for it.
 * Thread-safe.
 */
public final class BusyClaimLatches extends ForwardingProcessedMessageStore {

    private final ConcurrentMap<String, CountDownLatch> busy = new ConcurrentHashMap<>();

    public BusyClaimLatches(ProcessedMessageStore delegate) {
        super(delegate);
    }

    @Override
    public ClaimResult claim(String consumer, ClaimRequest request, Duration lease) {
        ClaimResult result = super.claim(consumer, request, lease);
        if (result.outcome() == ClaimOutcome.BUSY) {
            latch(consumer, request.messageId()).countDown();
        }
        return result;
    }

    /**
     * Waits until a claim of {@code key} by {@code consumer} has been told BUSY, for at most
     * {@code bound} (the copies of a key may all have gone to one consumer, one after another).
     *
     * @return whether one was
     */
    public boolean awaitBusy(String consumer, String key, Duration bound) throws InterruptedException {
        return latch(consumer, key).await(bound.toMillis(), TimeUnit.MILLISECONDS);
    }

    private CountDownLatch latch(String consumer, String key) {
        return busy.computeIfAbsent(consumer + "\u0000" + key, k -> new CountDownLatch(1));
    }
}
