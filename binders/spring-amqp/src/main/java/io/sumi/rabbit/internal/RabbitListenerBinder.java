package io.sumi.rabbit.internal;

import io.sumi.consumer.binder.ListenerBinder;
import java.lang.reflect.Method;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.rabbit.annotation.RabbitHandler;
import org.springframework.amqp.rabbit.annotation.RabbitListener;
import org.springframework.amqp.rabbit.annotation.RabbitListeners;
import org.springframework.core.annotation.AnnotatedElementUtils;

/**
 * The Spring AMQP binder's methods: {@code @RabbitListener} / {@code @RabbitHandler} methods and
 * methods taking an AMQP {@code Message}. Registered with {@link java.util.ServiceLoader}.
 */
public final class RabbitListenerBinder implements ListenerBinder {

    @Override
    public String name() {
        return "rabbit";
    }

    @Override
    public boolean guards(Method method, Class<?> targetClass) {
        return isListenerMethod(method) || hasAmqpMessageParameter(method);
    }

    /** Whether {@code method} is a {@code @RabbitListener}, {@code @RabbitListeners} or {@code @RabbitHandler} method. */
    public static boolean isListenerMethod(Method method) {
        return AnnotatedElementUtils.hasAnnotation(method, RabbitListener.class)
                || AnnotatedElementUtils.hasAnnotation(method, RabbitListeners.class)
                || AnnotatedElementUtils.hasAnnotation(method, RabbitHandler.class);
    }

    /** Whether {@code method} takes an AMQP {@link Message} or a list of them. */
    public static boolean hasAmqpMessageParameter(Method method) {
        for (Class<?> type : method.getParameterTypes()) {
            if (Message.class.isAssignableFrom(type)) {
                return true;
            }
        }
        return false;
    }
}
