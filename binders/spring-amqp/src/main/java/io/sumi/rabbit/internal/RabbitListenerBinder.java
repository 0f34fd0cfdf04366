package io.sumi.rabbit.internal;

import io.sumi.consumer.binder.ListenerBinder;
import io.sumi.rabbit.IdempotentRabbitHandlerInterceptor;
import java.lang.reflect.Method;

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
        return IdempotentRabbitHandlerInterceptor.isListenerMethod(method, targetClass)
                || IdempotentRabbitHandlerInterceptor.hasAmqpMessageParameter(method);
    }
}
