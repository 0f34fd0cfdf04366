package io.sumi.jms.internal;

import io.sumi.consumer.binder.ListenerBinder;
import jakarta.jms.Message;
import java.lang.reflect.Method;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.jms.annotation.JmsListener;
import org.springframework.jms.annotation.JmsListeners;

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
        return isListenerMethod(method) || hasJmsMessageParameter(method);
    }

    /** Whether {@code method} is a {@code @JmsListener} or {@code @JmsListeners} method. */
    public static boolean isListenerMethod(Method method) {
        return AnnotatedElementUtils.hasAnnotation(method, JmsListener.class)
                || AnnotatedElementUtils.hasAnnotation(method, JmsListeners.class);
    }

    /** Whether {@code method} takes a JMS {@link Message} (or a subtype). */
    public static boolean hasJmsMessageParameter(Method method) {
        for (Class<?> type : method.getParameterTypes()) {
            if (Message.class.isAssignableFrom(type)) {
                return true;
            }
        }
        return false;
    }
}
