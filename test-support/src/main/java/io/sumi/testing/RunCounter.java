package io.sumi.testing;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/** How often each test listener ran its own code, by listener name; thread-safe. */
public final class RunCounter {

    private final Map<String, AtomicInteger> counts = new ConcurrentHashMap<>();

    /** Counts one more run of {@code listener}; returns its number (1 for the first). */
    public int next(String listener) {
        return counts.computeIfAbsent(listener, k -> new AtomicInteger()).incrementAndGet();
    }

    /** How often {@code listener} ran. */
    public int of(String listener) {
        AtomicInteger count = counts.get(listener);
        return count == null ? 0 : count.get();
    }
}
