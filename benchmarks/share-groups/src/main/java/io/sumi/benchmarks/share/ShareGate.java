package io.sumi.benchmarks.share;

import java.util.function.Supplier;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ShareConsumer;
import org.jspecify.annotations.Nullable;
import org.springframework.context.SmartLifecycle;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.listener.AcknowledgingShareConsumerAwareMessageListener;
import org.springframework.kafka.listener.ContainerProperties;
import org.springframework.kafka.listener.DelegatingMessageListener;
import org.springframework.kafka.listener.MessageListener;
import org.springframework.kafka.listener.MessageListenerContainer;
import org.springframework.kafka.listener.ShareKafkaMessageListenerContainer;
import org.springframework.kafka.support.ShareAcknowledgment;

/**
 * Holds every record of the case's share containers at the door, before Sumi, until the run opens
 * {@link ShareRecorder#openGate()}: the drain is timed only once every member has its partitions
 * and the whole backlog is in the topic, so neither the members' join nor the producer's pace is in
 * it. Wraps each share container's listener just after Sumi's configurer has wrapped it (phase
 * {@code Integer.MIN_VALUE + 1}), in a listener of the same shape (with or without the
 * acknowledgement), so the container runs it as it would have run the one it wraps.
 */
final class ShareGate implements SmartLifecycle {

    private final Supplier<KafkaListenerEndpointRegistry> registry;
    private volatile boolean running;

    ShareGate(Supplier<KafkaListenerEndpointRegistry> registry) {
        this.registry = registry;
    }

    @Override
    @SuppressWarnings("unchecked")
    public void start() {
        for (MessageListenerContainer container : registry.get().getAllListenerContainers()) {
            if (container.isRunning()) {
                throw new IllegalStateException("share container " + container.getListenerId()
                        + " started before the gate: the drain would not be timed from a full backlog");
            }
            if (container instanceof ShareKafkaMessageListenerContainer<?, ?>) {
                ContainerProperties properties = container.getContainerProperties();
                Object listener = properties.getMessageListener();
                if (listener instanceof AcknowledgingShareConsumerAwareMessageListener<?, ?> acknowledging) {
                    properties.setMessageListener(new GatedAcknowledging(
                            (AcknowledgingShareConsumerAwareMessageListener<Object, Object>) acknowledging));
                } else if (listener instanceof MessageListener<?, ?> plain) {
                    properties.setMessageListener(new Gated((MessageListener<Object, Object>) plain));
                }
            }
        }
        running = true;
    }

    private record GatedAcknowledging(AcknowledgingShareConsumerAwareMessageListener<Object, Object> delegate)
            implements AcknowledgingShareConsumerAwareMessageListener<Object, Object>,
                    DelegatingMessageListener<Object> {

        @Override
        public void onShareRecord(
                ConsumerRecord<Object, Object> record,
                @Nullable ShareAcknowledgment acknowledgment,
                ShareConsumer<?, ?> consumer) {
            ShareRecorder.awaitGate();
            delegate.onShareRecord(record, acknowledgment, consumer);
        }

        @Override
        public Object getDelegate() {
            return delegate;
        }
    }

    private record Gated(MessageListener<Object, Object> delegate)
            implements MessageListener<Object, Object>, DelegatingMessageListener<Object> {

        @Override
        public void onMessage(ConsumerRecord<Object, Object> record) {
            ShareRecorder.awaitGate();
            delegate.onMessage(record);
        }

        @Override
        public Object getDelegate() {
            return delegate;
        }
    }

    @Override
    public void stop() {
        running = false;
    }

    @Override
    public boolean isRunning() {
        return running;
    }

    @Override
    public int getPhase() {
        return Integer.MIN_VALUE + 1;
    }
}
