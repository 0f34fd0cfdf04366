package io.sumi.kafka.internal;

import io.sumi.consumer.PollClaim;
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
 * <p>Shutdown always ends with {@code close()}. Spring Kafka's container, when it stops, commits the
 * pending acks and unsubscribes before it closes the consumer, and goes no further if either
 * throws: a ledger unreachable at that moment left the consumer open (its group member alive) and
 * the poll's claims renewed for ever. So when the completions cannot be written during the
 * container's shutdown, the commit commits nothing and returns, {@code unsubscribe()} abandons the
 * poll instead of throwing ({@link PollClaim#abandon}: renewal stops, the claims lapse when their
 * lease ends), and {@code close()} is reached. No offset of a record whose completion is not
 * durable is committed: its redelivery takes the lapsed claim over and runs it again.
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
    /** A poll was abandoned at shutdown: no offset may be committed until the next poll. */
    private boolean abandoned;

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
                abandoned = false;
                Object records = call(method, args);
                PollState state = records instanceof ConsumerRecords<?, ?> polled && !polled.isEmpty()
                        ? new PollState(polled)
                        : null;
                current = state;
                PollState.bind(state);
                return records;
            }
            case "commitSync", "commitAsync" -> {
                if (abandoned) {
                    // The completions of the poll were dropped: committing would skip its records.
                    return null;
                }
                PollState state = current;
                if (state != null) {
                    try {
                        state.completePending();
                    } catch (RuntimeException ex) {
                        if (!inContainerShutdown()) {
                            // The container goes on and commits again later: nothing is lost, and
                            // the poll is sought back so that every path (even one that never
                            // seeks, as a filtering RecordInterceptor in RECORD mode) delivers it again.
                            seekBack(state, ex);
                            throw ex;
                        }
                        // Thrown here, the exception would end the container's shutdown before
                        // unsubscribe() and close(): commit nothing and let the shutdown go on.
                        abandon(ex);
                        return null;
                    }
                }
                return call(method, args);
            }
            case "unsubscribe" -> {
                settleOrAbandon();
                return call(method, args);
            }
            case "close" -> {
                settleOrAbandon();
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

    /**
     * Before the consumer leaves its group: completes what ran and releases what did not, or, if the
     * ledger fails (or already failed during this shutdown), abandons the poll; never throws, so the
     * consumer is always closed.
     */
    private void settleOrAbandon() {
        PollState state = current;
        if (state == null) {
            return;
        }
        try {
            state.settle();
            current = null;
            PollState.bind(null);
        } catch (RuntimeException ex) {
            abandon(ex);
        }
    }

    /** Ends the current poll without the ledger: renewal stops, the claims lapse, no offset is committed until the next poll. */
    private void abandon(RuntimeException cause) {
        PollState state = current;
        current = null;
        PollState.bind(null);
        abandoned = true;
        if (state != null) {
            state.abandon();
        }
        log.warn(
                "Could not write the completions of the last poll while the consumer shuts down; nothing of it was"
                        + " committed, its claims are left to lapse and its records will be delivered again",
                cause);
    }

    /**
     * Whether this call comes from the listener container's shutdown ({@code wrapUp} of Spring
     * Kafka's {@code KafkaMessageListenerContainer}, which commits the pending acks and unsubscribes
     * before it closes the consumer, and skips the rest if either throws). Asked only when the
     * ledger has failed, so the stack walk costs nothing on the normal path. Outside a shutdown the
     * commit must throw (the container commits again later; returning would let it believe the
     * offsets committed). Should a later Spring Kafka rename that method, the commit would throw
     * during shutdown as before; {@code KafkaPollClaimIntegrationTests} pins the shutdown against
     * the real container, so an upgrade that does so fails the build.
     */
    private static boolean inContainerShutdown() {
        return StackWalker.getInstance()
                .walk(frames -> frames.anyMatch(frame -> frame.getMethodName().equals("wrapUp")
                        && frame.getClassName()
                                .startsWith("org.springframework.kafka.listener.KafkaMessageListenerContainer")));
    }

    private @Nullable Object call(Method method, @Nullable Object[] args) throws Throwable {
        try {
            return method.invoke(delegate, args);
        } catch (InvocationTargetException ex) {
            throw ex.getCause() != null ? ex.getCause() : ex;
        }
    }
}
