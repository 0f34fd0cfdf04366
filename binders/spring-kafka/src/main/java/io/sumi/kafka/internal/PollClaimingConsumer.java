package io.sumi.kafka.internal;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.kafka.core.ConsumerPostProcessor;

/**
 * Wraps a Kafka {@link Consumer} so that Sumi sees its polls and comes before its offset commits:
 * the records a {@code poll()} returns are bound to the consumer thread ({@link PollState}), and
 * the completions kept by the poll's claims are written before every {@code commitSync} /
 * {@code commitAsync} (whatever the container's AckMode, the container commits through its
 * consumer), before the next {@code poll()} (which also releases the claims of records that were
 * not run: a record failed and the error handler sought back, or the container kept records for
 * later), and before {@code close()}. A rebalance happens inside {@code poll()} or {@code close()},
 * so everything of the last poll is settled before partitions are revoked. A completion the ledger
 * refuses fails the commit or the poll: no offset is committed for a record whose completion is
 * not durable.
 *
 * <p>Containers whose offsets are not committed through the consumer (Kafka transactions send
 * them through the producer; {@code enable.auto.commit} commits them inside the client) are
 * refused at start-up instead (see {@code PollClaimContainerCheck}).
 */
public final class PollClaimingConsumer implements InvocationHandler {

    /** Adds the wrapper to every consumer a factory creates. */
    public static final class PostProcessor<K, V> implements ConsumerPostProcessor<K, V> {

        @Override
        public Consumer<K, V> apply(Consumer<K, V> consumer) {
            return wrap(consumer);
        }
    }

    private static final Logger log = LoggerFactory.getLogger(PollClaimingConsumer.class);

    private final Consumer<?, ?> delegate;
    private @Nullable PollState current;

    private PollClaimingConsumer(Consumer<?, ?> delegate) {
        this.delegate = delegate;
    }

    @SuppressWarnings("unchecked")
    static <K, V> Consumer<K, V> wrap(Consumer<K, V> consumer) {
        if (Proxy.isProxyClass(consumer.getClass())
                && Proxy.getInvocationHandler(consumer) instanceof PollClaimingConsumer) {
            return consumer;
        }
        return (Consumer<K, V>) Proxy.newProxyInstance(
                PollClaimingConsumer.class.getClassLoader(),
                new Class<?>[] {Consumer.class},
                new PollClaimingConsumer(consumer));
    }

    @Override
    public @Nullable Object invoke(Object proxy, Method method, @Nullable Object[] args) throws Throwable {
        switch (method.getName()) {
            case "poll" -> {
                settle();
                Object records = call(method, args);
                PollState state = records instanceof ConsumerRecords<?, ?> polled && !polled.isEmpty()
                        ? new PollState(polled)
                        : null;
                current = state;
                PollState.bind(state);
                return records;
            }
            case "commitSync", "commitAsync" -> {
                PollState state = current;
                if (state != null) {
                    try {
                        state.completePending();
                    } catch (RuntimeException ex) {
                        seekBack(state, ex);
                        throw ex;
                    }
                }
                return call(method, args);
            }
            case "unsubscribe" -> {
                settle();
                return call(method, args);
            }
            case "close" -> {
                try {
                    settle();
                } catch (RuntimeException ex) {
                    // Closed anyway: no offset was committed for the records whose completion failed
                    // (every commit writes the completions first), so they are delivered again.
                    log.warn(
                            "Could not write the completions of the last poll before closing the consumer; its records"
                                    + " were not committed and will be delivered again",
                            ex);
                } finally {
                    current = null;
                    PollState.bind(null);
                }
                return call(method, args);
            }
            case "equals" -> {
                return args != null && args[0] == proxy;
            }
            case "hashCode" -> {
                return System.identityHashCode(proxy);
            }
            case "toString" -> {
                return "PollClaimingConsumer[" + delegate + "]";
            }
            default -> {
                return call(method, args);
            }
        }
    }

    /**
     * A completion failed at a commit, and the error goes to the container, some of whose paths
     * never seek back (RECORD ack mode after a filtering {@code RecordInterceptor}, a nack): the rest
     * of the poll would be neither run nor delivered again. Seeking the poll's partitions back to its
     * first records makes the next poll deliver them again whatever the container does (a seek of
     * its own to a later offset wins, and is as safe: the kept completions are written before any
     * later commit). Records completed meanwhile come back as duplicates.
     */
    private void seekBack(PollState state, RuntimeException failure) {
        state.firstOffsets().forEach((partition, offset) -> {
            try {
                delegate.seek(partition, offset);
            } catch (RuntimeException ex) {
                // No longer assigned (revoked meanwhile): its new owner starts from the committed offset.
                failure.addSuppressed(ex);
            }
        });
    }

    private void settle() {
        PollState state = current;
        if (state != null) {
            state.settle();
            // Only once everything is completed: a failed completion is tried again at the next commit or poll.
            current = null;
            PollState.bind(null);
        }
    }

    private @Nullable Object call(Method method, @Nullable Object[] args) throws Throwable {
        try {
            return method.invoke(delegate, args);
        } catch (InvocationTargetException ex) {
            throw ex.getCause() != null ? ex.getCause() : ex;
        }
    }
}
