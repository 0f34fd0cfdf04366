package io.sumi.consumer.exception;

import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * The one cause-chain walk of Sumi and its binders: listener adapters and containers wrap Sumi's
 * exceptions (Spring Kafka's {@code ListenerExecutionFailedException}, Spring AMQP's, reflection's
 * {@code InvocationTargetException}), so every decision that depends on what failed looks through
 * the chain. Safe on cyclic chains.
 *
 * @since 0.1.0
 */
public final class Causes {

    private Causes() {}

    /** {@code failure}, then its cause, then that one's cause, ..., each at most once; empty for {@code null}. */
    public static List<Throwable> chain(@Nullable Throwable failure) {
        List<Throwable> chain = new ArrayList<>();
        Set<Throwable> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        for (Throwable t = failure; t != null && seen.add(t); t = t.getCause()) {
            chain.add(t);
        }
        return chain;
    }

    /** The first throwable of {@code type} in {@code failure}'s cause chain (itself included), if any. */
    public static <T extends Throwable> Optional<T> find(@Nullable Throwable failure, Class<T> type) {
        for (Throwable t : chain(failure)) {
            if (type.isInstance(t)) {
                return Optional.of(type.cast(t));
            }
        }
        return Optional.empty();
    }
}
