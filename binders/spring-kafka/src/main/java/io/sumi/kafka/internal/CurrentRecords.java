package io.sumi.kafka.internal;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.jspecify.annotations.Nullable;

/**
 * The record (or batch) the listener container is delivering on this thread, set by Sumi's
 * record and batch interceptors, so an {@code @IdempotentHandler} method can find the message's
 * headers whatever its parameters are (a payload alone carries no key).
 */
public final class CurrentRecords {

    private static final ThreadLocal<@Nullable Object> CURRENT = new ThreadLocal<>();

    private CurrentRecords() {}

    public static void set(Object recordOrRecords) {
        CURRENT.set(recordOrRecords);
    }

    public static void clear() {
        CURRENT.remove();
    }

    public static @Nullable ConsumerRecord<?, ?> record() {
        return CURRENT.get() instanceof ConsumerRecord<?, ?> record ? record : null;
    }

    public static @Nullable ConsumerRecords<?, ?> batch() {
        return CURRENT.get() instanceof ConsumerRecords<?, ?> records ? records : null;
    }
}
