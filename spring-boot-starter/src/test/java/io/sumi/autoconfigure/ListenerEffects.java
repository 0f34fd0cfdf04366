package io.sumi.autoconfigure;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * What a test's listeners did, counted per consumer and key: attempts (counted when the listener
 * method is called), work done and work failed (counted where the work runs, e.g. on the thread
 * that completes an asynchronous result), and the keys that reached a dead-letter handler. Shared
 * by the asynchronous-listener tests ({@code CompletableFuture}, {@code Mono}); thread-safe.
 */
class ListenerEffects {

    final List<String> dlt = Collections.synchronizedList(new ArrayList<>());

    private final Map<String, AtomicInteger> attempts = new ConcurrentHashMap<>();
    private final Map<String, AtomicInteger> done = new ConcurrentHashMap<>();
    private final Map<String, AtomicInteger> failed = new ConcurrentHashMap<>();

    /** Counts an attempt of {@code key}; returns which attempt it is (1 for the first). */
    int attempt(String consumer, String key) {
        return increment(attempts, consumer, key);
    }

    int attempts(String consumer, String key) {
        return count(attempts, consumer, key);
    }

    void did(String consumer, String key) {
        increment(done, consumer, key);
    }

    int done(String consumer, String key) {
        return count(done, consumer, key);
    }

    void fail(String consumer, String key) {
        increment(failed, consumer, key);
    }

    int failed(String consumer, String key) {
        return count(failed, consumer, key);
    }

    private static int increment(Map<String, AtomicInteger> counts, String consumer, String key) {
        return counts.computeIfAbsent(consumer + "/" + key, k -> new AtomicInteger())
                .incrementAndGet();
    }

    private static int count(Map<String, AtomicInteger> counts, String consumer, String key) {
        AtomicInteger count = counts.get(consumer + "/" + key);
        return count == null ? 0 : count.get();
    }
}
