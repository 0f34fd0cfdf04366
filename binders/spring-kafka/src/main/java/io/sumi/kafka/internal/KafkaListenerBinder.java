package io.sumi.kafka.internal;

import io.sumi.consumer.binder.ListenerBinder;
import io.sumi.kafka.IdempotentHandlerInterceptor;
import java.lang.reflect.Method;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;

/**
 * The Spring Kafka binder's methods: {@code @KafkaListener} / {@code @KafkaHandler} methods and
 * methods taking Kafka records; and, as the binder of service methods, every annotated method no
 * other binder guards (a listener calls it with a messaging {@code Message<?>} or a list).
 * Registered with {@link java.util.ServiceLoader}.
 */
public final class KafkaListenerBinder implements ListenerBinder {

    @Override
    public String name() {
        return "kafka";
    }

    @Override
    public boolean guards(Method method, Class<?> targetClass) {
        if (IdempotentHandlerInterceptor.isListenerMethod(method)) {
            return true;
        }
        for (Class<?> type : method.getParameterTypes()) {
            if (ConsumerRecord.class.isAssignableFrom(type) || ConsumerRecords.class.isAssignableFrom(type)) {
                return true;
            }
        }
        return false;
    }

    @Override
    public boolean takesUnclaimedMethods() {
        return true;
    }
}
