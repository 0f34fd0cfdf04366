package io.sumi.kafka.internal;

import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;
import org.jspecify.annotations.Nullable;
import org.springframework.kafka.listener.DelegatingMessageListener;

/**
 * A container's message listener and what it delegates to: Spring Kafka wraps the adapter of a
 * {@code @KafkaListener} method (retry topics, filtering, conversion), Sumi wraps share-group
 * listeners, and a test kit or an application may wrap any of them again.
 */
public final class ListenerDelegates {

    private ListenerDelegates() {}

    /**
     * The chain from {@code listener} down, outermost first: each {@link DelegatingMessageListener}'s
     * delegate in turn, up to the first listener that delegates to nothing else. Empty for
     * {@code null}.
     */
    public static List<Object> chain(@Nullable Object listener) {
        List<Object> chain = new ArrayList<>();
        Set<Object> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        Object current = listener;
        // A delegate seen before (a listener that names itself, or a cycle) ends the chain.
        while (current != null && seen.add(current)) {
            chain.add(current);
            current = current instanceof DelegatingMessageListener<?> delegating ? delegating.getDelegate() : null;
        }
        return chain;
    }

    /** The innermost listener of {@code listener}'s {@link #chain}: the one that calls the application; {@code null} for {@code null}. */
    public static @Nullable Object innermost(@Nullable Object listener) {
        List<Object> chain = chain(listener);
        return chain.isEmpty() ? null : chain.get(chain.size() - 1);
    }
}
