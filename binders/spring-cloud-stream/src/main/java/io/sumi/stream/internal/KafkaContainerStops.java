package io.sumi.stream.internal;

import io.sumi.consumer.exception.Causes;
import io.sumi.consumer.exception.ListenerStoppingException;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.integration.channel.AbstractMessageChannel;
import org.springframework.kafka.listener.AbstractMessageListenerContainer;
import org.springframework.kafka.listener.BatchInterceptor;
import org.springframework.kafka.listener.CompositeBatchInterceptor;
import org.springframework.kafka.listener.CompositeRecordInterceptor;
import org.springframework.kafka.listener.RecordInterceptor;
import org.springframework.messaging.Message;
import org.springframework.messaging.MessageChannel;
import org.springframework.messaging.support.ChannelInterceptor;

/**
 * What a Kafka binder container's stop does to the message in hand, for
 * {@link io.sumi.stream.SumiKafkaBinderContainerCustomizer}: the container is bound to its consumer
 * threads ({@link DeliveringContainer}), so that the invoker sees the stop; and a message the stop
 * interrupted ({@link ListenerStoppingException}) is kept from the binding's error channel, whose
 * subscribers would dead-letter it (the binder's DLQ) or log it, and goes to the container's error
 * handler instead, which Sumi taught to seek back to it (no offset committed). Loaded only when
 * Spring Kafka is on the class path.
 */
public final class KafkaContainerStops {

    private static final Logger log = LoggerFactory.getLogger(KafkaContainerStops.class);

    private KafkaContainerStops() {}

    /**
     * Binds {@code container} to each of its consumer threads before every poll, next to the
     * record and batch interceptors it has already.
     */
    public static <K, V> void watch(AbstractMessageListenerContainer<K, V> container) {
        RecordInterceptor<K, V> records = container.getRecordInterceptor();
        if (!(records instanceof Binding<K, V>)) {
            Binding<K, V> binding = new Binding<>(container::isRunning);
            container.setRecordInterceptor(
                    records == null ? binding : new CompositeRecordInterceptor<>(binding, records));
        }
        BatchInterceptor<K, V> batches = container.getBatchInterceptor();
        if (!(batches instanceof Binding<K, V>)) {
            Binding<K, V> binding = new Binding<>(container::isRunning);
            container.setBatchInterceptor(
                    batches == null ? binding : new CompositeBatchInterceptor<>(binding, batches));
        }
    }

    /**
     * Guards a binding's error channel (once): an error message about a message its container's
     * stop interrupted is not delivered (neither to the DLQ handler nor to the global error
     * channel); the failure is thrown back to the binder's recoverer, and from there to the listener
     * container.
     */
    public static void guard(AbstractMessageChannel errorChannel, String bindingName) {
        if (errorChannel.getInterceptors().stream().noneMatch(ErrorChannelGuard.class::isInstance)) {
            errorChannel.addInterceptor(0, new ErrorChannelGuard(bindingName));
        }
    }

    private static final class ErrorChannelGuard implements ChannelInterceptor {

        private final String bindingName;

        ErrorChannelGuard(String bindingName) {
            this.bindingName = bindingName;
        }

        @Override
        public Message<?> preSend(Message<?> message, MessageChannel channel) {
            if (message.getPayload() instanceof RuntimeException failure
                    && Causes.find(failure, ListenerStoppingException.class).isPresent()) {
                log.info(
                        "A message of binding '{}' was interrupted by the stop of its container: left unsettled"
                                + " (not dead-lettered, its offset not committed), delivered again once a consumer"
                                + " runs",
                        bindingName);
                throw failure;
            }
            return message;
        }
    }

    /** Passes records through unchanged; binds the container to the consumer thread before each poll. */
    private static final class Binding<K, V> implements RecordInterceptor<K, V>, BatchInterceptor<K, V> {

        private final BooleanSupplier running;

        Binding(BooleanSupplier running) {
            this.running = running;
        }

        @Override
        public ConsumerRecord<K, V> intercept(ConsumerRecord<K, V> record, Consumer<K, V> consumer) {
            return record;
        }

        @Override
        public ConsumerRecords<K, V> intercept(ConsumerRecords<K, V> records, Consumer<K, V> consumer) {
            return records;
        }

        @Override
        public void setupThreadState(Consumer<?, ?> consumer) {
            DeliveringContainer.bind(running);
        }

        @Override
        public void clearThreadState(Consumer<?, ?> consumer) {
            DeliveringContainer.clear();
        }
    }
}
