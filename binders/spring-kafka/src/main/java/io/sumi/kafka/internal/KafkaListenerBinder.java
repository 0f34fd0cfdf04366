package io.sumi.kafka.internal;

import io.sumi.consumer.binder.ListenerBinder;
import java.lang.reflect.Method;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.kafka.annotation.KafkaHandler;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.annotation.KafkaListeners;

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
        if (isListenerMethod(method)) {
            return true;
        }
        for (Class<?> type : method.getParameterTypes()) {
            if (ConsumerRecord.class.isAssignableFrom(type) || ConsumerRecords.class.isAssignableFrom(type)) {
                return true;
            }
        }
        return false;
    }

    /** Whether {@code method} is a {@code @KafkaListener}, {@code @KafkaListeners} or {@code @KafkaHandler} method. */
    public static boolean isListenerMethod(Method method) {
        return AnnotatedElementUtils.hasAnnotation(method, KafkaListener.class)
                || AnnotatedElementUtils.hasAnnotation(method, KafkaListeners.class)
                || AnnotatedElementUtils.hasAnnotation(method, KafkaHandler.class);
    }

    @Override
    public boolean takesUnclaimedMethods() {
        return true;
    }
}
