package io.sumi.test;

import io.sumi.store.ForwardingProcessedMessageStore;
import io.sumi.store.ProcessedMessage;
import io.sumi.store.ProcessedMessageStore;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.config.BeanPostProcessor;

/**
 * Crashes for lease mode: the next completions of a consumer fail as if the JVM died after the
 * handler's effect and before the ledger's {@code COMPLETED}. The handler has run (the mail went
 * out, the card was charged); the ledger's {@code complete} throws a {@link SimulatedCrash}
 * instead of writing, and the claim is neither completed nor released (a dead JVM releases
 * nothing; a release the executor tries for it is dropped). The delivery is not acknowledged; the
 * redelivery finds the key BUSY until the claim's lease ends, then takes it over and runs the
 * handler again, with the same key. That second run is what a provider key passthrough
 * ({@code IdempotencyContext.current().key()} as the provider's idempotency key) must absorb.
 *
 * <p>The kit installs one around the application's ledger in every Spring test (see
 * {@link SumiTest#crashes()}); outside tests, register {@link #postProcessor()} as a bean (the
 * charge example's demo does). Crashes apply to lease-mode completions only (transactional mode
 * completes in the handler's own transaction). Thread-safe.
 */
public final class CrashInjector {

    /** Thrown by the ledger's completion instead of completing: the simulated crash. */
    public static final class SimulatedCrash extends RuntimeException {
        SimulatedCrash(String consumer, String key) {
            super("simulated crash of consumer '" + consumer + "' between the handler's effect and the ledger's"
                    + " COMPLETED of key " + key);
        }
    }

    private final Map<String, AtomicInteger> nextCompletions = new ConcurrentHashMap<>();
    private final Set<String> keys = ConcurrentHashMap.newKeySet();
    private final Map<String, AtomicInteger> crashes = new ConcurrentHashMap<>();
    /** consumer + claim token + key of every crashed claim: its releases are dropped. */
    private final Set<String> dead = ConcurrentHashMap.newKeySet();

    /** The next {@code completions} lease-mode completions of {@code consumer} crash (added to any still armed). */
    public CrashInjector crashNextCompletions(String consumer, int completions) {
        if (completions < 0) {
            throw new IllegalArgumentException("completions must not be negative: " + completions);
        }
        nextCompletions.computeIfAbsent(consumer, c -> new AtomicInteger()).addAndGet(completions);
        return this;
    }

    /** The next completion of {@code key} by {@code consumer} crashes. */
    public CrashInjector crashNextCompletion(String consumer, String key) {
        keys.add(consumer + '\u0000' + key);
        return this;
    }

    /** Crashes injected so far, for every consumer. */
    public int crashes() {
        return crashes.values().stream().mapToInt(AtomicInteger::get).sum();
    }

    /** Crashes injected so far for {@code consumer}. */
    public int crashes(String consumer) {
        AtomicInteger count = crashes.get(consumer);
        return count == null ? 0 : count.get();
    }

    /** Disarms every crash still planned and forgets the counts. */
    public void reset() {
        nextCompletions.clear();
        keys.clear();
        crashes.clear();
    }

    /** {@code store}, with this injector's crashes. */
    public ProcessedMessageStore wrap(ProcessedMessageStore store) {
        return store instanceof CrashingStore crashing && crashing.injector == this
                ? store
                : new CrashingStore(store, this);
    }

    /** Wraps every {@link ProcessedMessageStore} bean of the context with this injector. */
    public BeanPostProcessor postProcessor() {
        CrashInjector injector = this;
        return new BeanPostProcessor() {
            @Override
            public Object postProcessAfterInitialization(Object bean, String beanName) {
                return bean instanceof ProcessedMessageStore store && !(bean instanceof CrashingStore)
                        ? injector.wrap(store)
                        : bean;
            }
        };
    }

    /** The key of {@code messageIds} that crashes now, if any (and counts it). */
    private @Nullable String crashing(String consumer, Collection<String> messageIds) {
        for (String key : messageIds) {
            if (keys.remove(consumer + '\u0000' + key)) {
                return crashed(consumer, key);
            }
        }
        AtomicInteger armed = nextCompletions.get(consumer);
        if (armed != null && !messageIds.isEmpty() && armed.getAndUpdate(n -> n > 0 ? n - 1 : 0) > 0) {
            return crashed(consumer, messageIds.iterator().next());
        }
        return null;
    }

    private String crashed(String consumer, String key) {
        crashes.computeIfAbsent(consumer, c -> new AtomicInteger()).incrementAndGet();
        return key;
    }

    private static String claimId(String consumer, long token, String key) {
        return consumer + '\u0000' + token + '\u0000' + key;
    }

    private static final class CrashingStore extends ForwardingProcessedMessageStore {

        private final CrashInjector injector;

        CrashingStore(ProcessedMessageStore delegate, CrashInjector injector) {
            super(delegate);
            this.injector = injector;
        }

        @Override
        public boolean complete(ProcessedMessage claim) {
            crash(claim.consumer(), claim.claimToken(), List.of(claim.messageId()));
            return super.complete(claim);
        }

        @Override
        public int completeAll(String consumer, long claimToken, Collection<String> messageIds) {
            crash(consumer, claimToken, messageIds);
            return super.completeAll(consumer, claimToken, messageIds);
        }

        /** A crashed JVM completes nothing of the call, and releases none of its claims later. */
        private void crash(String consumer, long token, Collection<String> messageIds) {
            String key = injector.crashing(consumer, messageIds);
            if (key != null) {
                for (String id : messageIds) {
                    injector.dead.add(claimId(consumer, token, id));
                }
                throw new SimulatedCrash(consumer, key);
            }
        }

        @Override
        public boolean release(ProcessedMessage claim, @Nullable String error) {
            if (injector.dead.contains(claimId(claim.consumer(), claim.claimToken(), claim.messageId()))) {
                return false;
            }
            return super.release(claim, error);
        }

        @Override
        public int releaseAll(String consumer, long claimToken, Collection<String> messageIds, @Nullable String error) {
            List<String> alive = alive(consumer, claimToken, messageIds);
            return alive.isEmpty() ? 0 : super.releaseAll(consumer, claimToken, alive, error);
        }

        @Override
        public int releaseUnrun(String consumer, long claimToken, Collection<String> messageIds) {
            List<String> alive = alive(consumer, claimToken, messageIds);
            return alive.isEmpty() ? 0 : super.releaseUnrun(consumer, claimToken, alive);
        }

        /** The claims among {@code messageIds} whose JVM did not crash: a dead one gives nothing back. */
        private List<String> alive(String consumer, long claimToken, Collection<String> messageIds) {
            List<String> alive = new ArrayList<>(messageIds.size());
            for (String id : messageIds) {
                if (!injector.dead.contains(claimId(consumer, claimToken, id))) {
                    alive.add(id);
                }
            }
            return alive;
        }
    }
}
