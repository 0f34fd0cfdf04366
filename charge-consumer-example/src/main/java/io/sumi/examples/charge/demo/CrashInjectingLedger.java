package io.sumi.examples.charge.demo;

import io.sumi.store.ForwardingProcessedMessageStore;
import io.sumi.store.ProcessedMessage;
import io.sumi.store.ProcessedMessageStore;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The ledger, with crashes: for the keys planned, the first completion "crashes" (throws) after
 * the handler's charge went through, exactly as a JVM dying between the provider's answer and the
 * ledger's {@code COMPLETED}. The claim is neither completed nor released: the redelivery finds it
 * busy until its lease runs out, then takes it over and charges again, with the same key.
 */
public final class CrashInjectingLedger extends ForwardingProcessedMessageStore {

    /** Thrown instead of completing: the simulated crash. */
    public static final class SimulatedCrash extends RuntimeException {
        SimulatedCrash(String key) {
            super("simulated crash between the provider call and the ledger's completion of " + key);
        }
    }

    private final Set<String> crashOnce = ConcurrentHashMap.newKeySet();
    private final AtomicInteger crashes = new AtomicInteger();

    public CrashInjectingLedger(ProcessedMessageStore delegate) {
        super(delegate);
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
        return super.complete(claim);
    }

    @Override
    public int completeAll(String consumer, long claimToken, Collection<String> messageIds) {
        maybeCrash(messageIds);
        return super.completeAll(consumer, claimToken, messageIds);
    }
}
