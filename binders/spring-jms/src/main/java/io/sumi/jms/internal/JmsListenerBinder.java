package io.sumi.jms.internal;

import io.sumi.consumer.binder.ListenerBinder;
import io.sumi.jms.IdempotentJmsHandlerInterceptor;
import java.lang.reflect.Method;

/**
 * The Spring JMS binder's methods: {@code @JmsListener} methods and methods taking a JMS
 * {@code Message}. Registered with {@link java.util.ServiceLoader}.
 */
public final class JmsListenerBinder implements ListenerBinder {

    @Override
    public String name() {
        return "jms";
    }

    @Override
    public boolean guards(Method method, Class<?> targetClass) {
        return IdempotentJmsHandlerInterceptor.isListenerMethod(method)
                || IdempotentJmsHandlerInterceptor.hasJmsMessageParameter(method);
    }
}
