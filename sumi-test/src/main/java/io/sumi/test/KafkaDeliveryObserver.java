package io.sumi.test;

import io.sumi.test.internal.RecordKeys;
import java.util.function.Supplier;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.kafka.config.AbstractKafkaListenerContainerFactory;
import org.springframework.kafka.listener.BatchInterceptor;
import org.springframework.kafka.listener.CompositeBatchInterceptor;
import org.springframework.kafka.listener.CompositeRecordInterceptor;
import org.springframework.kafka.listener.RecordInterceptor;

/**
 * Watches every record a Kafka listener container hands to its listener, guarded by Sumi or not:
 * opens a {@link DeliveryFrame} before the listener runs and records how the call ended. Never
 * changes or skips a record. Added to every listener container factory, after the interceptors the
 * application set.
 */
final class KafkaDeliveryObserver implements RecordInterceptor<Object, Object>, BatchInterceptor<Object, Object> {

    private final Supplier<DeliveryLog> log;

    KafkaDeliveryObserver(Supplier<DeliveryLog> log) {
        this.log = log;
    }

    /** Adds the observer to every container factory. */
    public static BeanPostProcessor postProcessor(Supplier<DeliveryLog> log) {
        KafkaDeliveryObserver observer = new KafkaDeliveryObserver(log);
        return new BeanPostProcessor() {
            @Override
            @SuppressWarnings({"unchecked", "rawtypes"})
            public Object postProcessAfterInitialization(Object bean, String beanName) {
                if (bean instanceof AbstractKafkaListenerContainerFactory factory) {
                    RecordInterceptor existing = factory.getRecordInterceptor();
                    if (!(existing instanceof KafkaDeliveryObserver)) {
                        factory.setRecordInterceptor(
                                existing == null ? observer : new CompositeRecordInterceptor(existing, observer));
                    }
                    BatchInterceptor existingBatch = factory.getBatchInterceptor();
                    if (!(existingBatch instanceof KafkaDeliveryObserver)) {
                        factory.setBatchInterceptor(
                                existingBatch == null
                                        ? observer
                                        : new CompositeBatchInterceptor(existingBatch, observer));
                    }
                }
                return bean;
            }
        };
    }

    @Override
    public ConsumerRecord<Object, Object> intercept(
            ConsumerRecord<Object, Object> record, Consumer<Object, Object> consumer) {
        DeliveryFrame.open(groupOf(consumer), RecordKeys.keyOf(record), record.topic());
        return record;
    }

    @Override
    public void success(ConsumerRecord<Object, Object> record, Consumer<Object, Object> consumer) {
        DeliveryFrame frame = DeliveryFrame.current();
        if (frame != null) {
            frame.finish(log.get(), true);
        }
    }

    @Override
    public void failure(ConsumerRecord<Object, Object> record, Exception exception, Consumer<Object, Object> consumer) {
        DeliveryFrame frame = DeliveryFrame.current();
        if (frame != null) {
            frame.finish(log.get(), false);
        }
    }

    @Override
    public void afterRecord(ConsumerRecord<Object, Object> record, Consumer<Object, Object> consumer) {
        DeliveryFrame.close();
    }

    @Override
    public void clearThreadState(Consumer<?, ?> consumer) {
        DeliveryFrame.close();
    }

    // ---------------------------------------------------------------- batch listeners

    @Override
    public ConsumerRecords<Object, Object> intercept(
            ConsumerRecords<Object, Object> records, Consumer<Object, Object> consumer) {
        return records;
    }

    /**
     * A batch listener returned: each record of the batch is acknowledged. With Sumi the executor
     * recorded runs and outcomes per key; without, each record counts as one run of the handler.
     * (A batch that fails part-way is not counted until it is delivered again and returns.)
     */
    @Override
    public void success(ConsumerRecords<Object, Object> records, Consumer<Object, Object> consumer) {
        DeliveryLog deliveries = log.get();
        String group = groupOf(consumer);
        String name = deliveries.resolve(group);
        boolean guarded = !name.equals(group) || isGuarded(deliveries, group);
        for (ConsumerRecord<Object, Object> record : records) {
            String key = RecordKeys.keyOf(record);
            if (!guarded) {
                deliveries.handlerRan(group, key);
                deliveries.outcome(group, key, DeliveryOutcome.PROCESSED);
            }
            deliveries.delivered(name, key, record.topic(), true);
        }
    }

    private static boolean isGuarded(DeliveryLog deliveries, String name) {
        DeliveryLog.ConsumerStats stats = deliveries.find(name);
        return stats != null && stats.guarded();
    }

    private static String groupOf(Consumer<?, ?> consumer) {
        try {
            return consumer.groupMetadata().groupId();
        } catch (RuntimeException ex) {
            return "<no group>";
        }
    }
}
