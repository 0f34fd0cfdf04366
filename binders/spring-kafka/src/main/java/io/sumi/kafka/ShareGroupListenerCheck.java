package io.sumi.kafka;

import java.util.Objects;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.springframework.context.SmartLifecycle;
import org.springframework.kafka.listener.AbstractMessageListenerContainer;
import org.springframework.kafka.listener.AbstractShareKafkaMessageListenerContainer;
import org.springframework.kafka.listener.ListenerContainerRegistry;
import org.springframework.kafka.listener.MessageListenerContainer;

/**
 * Refuses, before the containers start, a share-group container (KIP-932,
 * {@code ShareKafkaListenerContainerFactory}) that runs an {@code @IdempotentHandler} listener.
 *
 * <p>Sumi's Kafka rules are those of a consumer group: a record whose handler failed, or whose key
 * another consumer holds (BUSY), is sought back and read again, for as long as it takes. A share
 * group counts every delivery of a record instead, and after {@code group.share.delivery.count.limit}
 * (5 by default) it archives the record: drops it. Its container turns a listener's exception into
 * a REJECT (dropped at once) or a RELEASE (counted), and a BUSY key held by another consumer of the
 * group, the normal case there, would use up the deliveries while its holder runs. Nothing in Sumi
 * settles share acknowledgements yet, so such a listener would lose messages; it fails start-up
 * instead, saying what to use (docs/kafka.md, "Share groups").
 */
public final class ShareGroupListenerCheck implements SmartLifecycle {

    private final Supplier<? extends ListenerContainerRegistry> containers;
    private volatile boolean running;

    public ShareGroupListenerCheck(Supplier<? extends ListenerContainerRegistry> containers) {
        this.containers = Objects.requireNonNull(containers, "containers");
    }

    @Override
    public void start() {
        for (MessageListenerContainer container : containers.get().getAllListenerContainers()) {
            if (container instanceof AbstractShareKafkaMessageListenerContainer<?, ?> share) {
                check(share);
            }
        }
        running = true;
    }

    /**
     * Refuses a share-group container whose listener is an {@code @IdempotentHandler} (or whose
     * listener Sumi cannot see into).
     *
     * @throws IllegalStateException naming the container and what to do instead
     */
    public static void check(AbstractShareKafkaMessageListenerContainer<?, ?> container) {
        Object listener = container.getContainerProperties().getMessageListener();
        if (Boolean.FALSE.equals(SumiErrorHandlerConfigurer.runsIdempotentHandler(listener))) {
            return;
        }
        throw new IllegalStateException("Kafka listener container '" + container.getListenerId()
                + "' is a share-group container (KIP-932, ShareKafkaListenerContainerFactory) and runs an"
                + " @IdempotentHandler listener, which Sumi does not support yet: a share group drops a record after"
                + " group.share.delivery.count.limit deliveries (5 by default), and a failed handler or a key another"
                + " consumer of the group is running would use them up, so messages would be lost. Consume this topic"
                + " with an ordinary consumer group (ConcurrentKafkaListenerContainerFactory, the default), or remove"
                + " @IdempotentHandler from this listener. See docs/kafka.md#share-groups");
    }

    /**
     * Whether {@code listener} (a container's message listener) calls a bean with an
     * {@code @IdempotentHandler} method; {@code null} if Sumi cannot tell. For the share-group
     * module, which guards such containers.
     *
     * @since 0.1.0
     */
    public static @Nullable Boolean runsIdempotentHandler(@Nullable Object listener) {
        return SumiErrorHandlerConfigurer.runsIdempotentHandler(listener);
    }

    /**
     * The bean whose method {@code listener} (a container's message listener, a
     * {@code @KafkaListener} adapter) calls, or {@code null} if Sumi cannot see it.
     *
     * @since 0.1.0
     */
    public static @Nullable Object listenerBean(@Nullable Object listener) {
        return SumiErrorHandlerConfigurer.listenerBean(listener);
    }

    @Override
    public void stop() {
        running = false;
    }

    @Override
    public boolean isRunning() {
        return running;
    }

    /** Before the listener containers. */
    @Override
    public int getPhase() {
        return AbstractMessageListenerContainer.DEFAULT_PHASE - 3;
    }
}
