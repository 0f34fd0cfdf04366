package io.sumi.test;

import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import org.jspecify.annotations.Nullable;

/**
 * What the kit saw consumers do since the current test began, per consumer and message key:
 * how often the handler ran, how each delivery ended, whether Sumi guarded it. A consumer is known
 * by its ledger namespace once Sumi guarded it, and by its listener's consumer group (or the
 * Stream function's name) otherwise; either name finds it. Thread-safe.
 */
final class DeliveryLog {

    /** What one consumer did with one key. */
    public static final class KeyStats {
        private int runs;
        private int terminal;
        private final EnumMap<DeliveryOutcome, Integer> outcomes = new EnumMap<>(DeliveryOutcome.class);

        /** Times the handler's own code ran to its end for the key. */
        public synchronized int runs() {
            return runs;
        }

        /** Deliveries whose listener call ended without an exception (acknowledged). */
        public synchronized int acknowledged() {
            return terminal;
        }

        public synchronized int count(DeliveryOutcome outcome) {
            return outcomes.getOrDefault(outcome, 0);
        }

        public synchronized Map<DeliveryOutcome, Integer> outcomes() {
            return new EnumMap<>(outcomes);
        }

        @Override
        public synchronized String toString() {
            return "runs=" + runs + ", acknowledged=" + terminal + ", outcomes=" + outcomes;
        }
    }

    /** One consumer's view. */
    public static final class ConsumerStats {
        private final String name;
        private volatile boolean guarded;
        private final ConcurrentMap<String, KeyStats> keys = new ConcurrentHashMap<>();
        private final Set<String> topics = ConcurrentHashMap.newKeySet();

        ConsumerStats(String name) {
            this.name = name;
        }

        public String name() {
            return name;
        }

        /** Whether Sumi's executor ran for this consumer (an {@code @IdempotentHandler}). */
        public boolean guarded() {
            return guarded;
        }

        public KeyStats key(String key) {
            return keys.computeIfAbsent(key, k -> new KeyStats());
        }

        /** The keys seen, in order. */
        public List<String> keys() {
            return new ArrayList<>(new TreeMap<>(keys).keySet());
        }

        /** The topics (or destinations) its deliveries came from. */
        public Set<String> topics() {
            return Set.copyOf(topics);
        }

        public int total(DeliveryOutcome outcome) {
            return keys.values().stream()
                    .mapToInt(stats -> stats.count(outcome))
                    .sum();
        }

        public int totalRuns() {
            return keys.values().stream().mapToInt(KeyStats::runs).sum();
        }
    }

    private final ConcurrentMap<String, ConsumerStats> consumers = new ConcurrentHashMap<>();
    private final ConcurrentMap<String, String> aliases = new ConcurrentHashMap<>();

    /** Forgets everything (a new test begins). */
    public void reset() {
        consumers.clear();
        aliases.clear();
    }

    private ConsumerStats stats(String consumer) {
        return consumers.computeIfAbsent(consumer, ConsumerStats::new);
    }

    /** {@code listener} (a consumer group, a function name) is guarded by Sumi under the ledger namespace {@code consumer}. */
    public void guarded(@Nullable String listener, String consumer) {
        stats(consumer).guarded = true;
        if (listener != null && !listener.equals(consumer)) {
            aliases.put(listener, consumer);
        }
    }

    public void handlerRan(String consumer, String key) {
        KeyStats stats = stats(consumer).key(key);
        synchronized (stats) {
            stats.runs++;
        }
    }

    public void outcome(String consumer, String key, DeliveryOutcome outcome) {
        KeyStats stats = stats(consumer).key(key);
        synchronized (stats) {
            stats.outcomes.merge(outcome, 1, Integer::sum);
        }
    }

    /** A delivery of {@code key} from {@code topic} to {@code consumer} ended; {@code acknowledged} if without an exception. */
    public void delivered(String consumer, String key, @Nullable String topic, boolean acknowledged) {
        ConsumerStats consumerStats = stats(consumer);
        if (topic != null) {
            consumerStats.topics.add(topic);
        }
        KeyStats stats = consumerStats.key(key);
        if (acknowledged) {
            synchronized (stats) {
                stats.terminal++;
            }
        }
    }

    /** The consumer called {@code name} (a ledger namespace, or a listener's group or function name), if it was seen. */
    public @Nullable ConsumerStats find(String name) {
        ConsumerStats direct = consumers.get(name);
        if (direct != null && (direct.guarded || !aliases.containsKey(name))) {
            return direct;
        }
        String alias = aliases.get(name);
        return alias != null ? consumers.get(alias) : direct;
    }

    /** The ledger namespace of {@code listener} if Sumi guarded it, else {@code listener}. */
    public String resolve(String listener) {
        return aliases.getOrDefault(listener, listener);
    }

    /** The names {@code consumer} is known by: itself and the listeners Sumi guards under it. */
    public Set<String> namesOf(String consumer) {
        Set<String> names = new java.util.HashSet<>();
        names.add(consumer);
        aliases.forEach((listener, namespace) -> {
            if (namespace.equals(consumer)) {
                names.add(listener);
            }
        });
        return names;
    }

    /** Every consumer seen, by name. */
    public Set<String> consumers() {
        return Set.copyOf(consumers.keySet());
    }
}
