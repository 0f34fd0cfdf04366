package io.sumi.autoconfigure;

import io.sumi.consumer.IdempotentHandler;
import java.lang.reflect.Method;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.context.annotation.Bean;
import org.springframework.core.annotation.AnnotatedElementUtils;

/**
 * The ledger namespaces (consumers) of the application's {@link IdempotentHandler}s, found once
 * the context is up: the per-consumer gauges are registered for them.
 */
final class HandlerConsumers {

    /** How a binder names the consumer of an annotated listener method (the Kafka binder's own rule). */
    @FunctionalInterface
    interface ListenerNaming {
        String consumer(Method method, Class<?> userClass);
    }

    private HandlerConsumers() {}

    /**
     * @param listenerNaming how listener methods are named, or {@code null} when no binder handles them
     */
    static Set<String> of(ConfigurableListableBeanFactory beanFactory, @Nullable ListenerNaming listenerNaming) {
        Set<String> consumers = new TreeSet<>();
        // Functional beans (Spring Cloud Stream): the annotation's consumer, else the bean name, as
        // the Stream binder names them. findAnnotationOnBean also reads the @Bean factory method.
        for (String beanName : beanFactory.getBeanNamesForAnnotation(IdempotentHandler.class)) {
            IdempotentHandler annotation = beanFactory.findAnnotationOnBean(beanName, IdempotentHandler.class, false);
            if (annotation != null) {
                consumers.add(annotation.consumer().isBlank() ? beanName : annotation.consumer());
            }
        }
        if (listenerNaming != null) {
            for (Map.Entry<Method, Class<?>> handler :
                    new IdempotentHandlerVerifier(beanFactory).handlers().entrySet()) {
                if (!AnnotatedElementUtils.hasAnnotation(handler.getKey(), Bean.class)) {
                    consumers.add(listenerNaming.consumer(handler.getKey(), handler.getValue()));
                }
            }
        }
        return consumers;
    }
}
