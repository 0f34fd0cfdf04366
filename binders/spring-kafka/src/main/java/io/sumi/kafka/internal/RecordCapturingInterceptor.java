package io.sumi.kafka.internal;

import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.springframework.kafka.listener.BatchInterceptor;
import org.springframework.kafka.listener.RecordInterceptor;

/**
 * Records the record or batch being delivered in {@link CurrentRecords}, and forgets it once the
 * listener has returned. It never changes or skips a record.
 */
public final class RecordCapturingInterceptor
        implements RecordInterceptor<Object, Object>, BatchInterceptor<Object, Object> {

    @Override
    public ConsumerRecord<Object, Object> intercept(
            ConsumerRecord<Object, Object> record, Consumer<Object, Object> consumer) {
        CurrentRecords.set(record);
        return record;
    }

    @Override
    public void afterRecord(ConsumerRecord<Object, Object> record, Consumer<Object, Object> consumer) {
        CurrentRecords.clear();
    }

    @Override
    public ConsumerRecords<Object, Object> intercept(
            ConsumerRecords<Object, Object> records, Consumer<Object, Object> consumer) {
        CurrentRecords.set(records);
        return records;
    }

    @Override
    public void success(ConsumerRecords<Object, Object> records, Consumer<Object, Object> consumer) {
        CurrentRecords.clear();
    }

    @Override
    public void failure(
            ConsumerRecords<Object, Object> records, Exception exception, Consumer<Object, Object> consumer) {
        CurrentRecords.clear();
    }

    @Override
    public void clearThreadState(Consumer<?, ?> consumer) {
        CurrentRecords.clear();
    }
}
