package io.sumi.autoconfigure;

import io.sumi.consumer.IdempotentHandler;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.springframework.aop.support.AopUtils;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.context.annotation.Bean;
import org.springframework.core.MethodIntrospector;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.util.ClassUtils;

/**
 * Once the context is up, finds every {@link IdempotentHandler} and makes sure a binder handles
 * it, so an annotation is never silently ignored (a listener that would then process every
 * duplicate). Listener methods need the Spring Kafka binder's advisor; {@code @Bean} methods of
 * functional beans need the Spring Cloud Stream binder. Each binder's own check then validates
 * the annotation (lease, key expression).
 */
class IdempotentHandlerVerifier implements SmartInitializingSingleton {

    static final String KAFKA_ADVISOR = "io.sumi.kafka.IdempotentHandlerAdvisor";
    static final String STREAM_POST_PROCESSOR = "io.sumi.stream.IdempotentFunctionPostProcessor";
    static final String RABBIT_ADVISOR = "io.sumi.rabbit.IdempotentRabbitHandlerAdvisor";
    static final String JMS_ADVISOR = "io.sumi.jms.IdempotentJmsHandlerAdvisor";

    private final ConfigurableListableBeanFactory beanFactory;

    IdempotentHandlerVerifier(ConfigurableListableBeanFactory beanFactory) {
        this.beanFactory = beanFactory;
    }

    @Override
    public void afterSingletonsInstantiated() {
        boolean kafka = hasBean(KAFKA_ADVISOR);
        boolean stream = hasBean(STREAM_POST_PROCESSOR);
        boolean rabbit = hasBean(RABBIT_ADVISOR);
        boolean jms = hasBean(JMS_ADVISOR);
        List<String> unbound = new ArrayList<>();
        for (Map.Entry<Method, Class<?>> handler : handlers().entrySet()) {
            Method method = handler.getKey();
            boolean functionBean = AnnotatedElementUtils.hasAnnotation(method, Bean.class);
            boolean bound =
                    functionBean ? stream : isRabbitHandler(method) ? rabbit : isJmsHandler(method) ? jms : kafka;
            if (!bound) {
                unbound.add(ClassUtils.getQualifiedMethodName(method, handler.getValue()));
            }
        }
        if (!unbound.isEmpty()) {
            throw new IllegalStateException(
                    "@IdempotentHandler on " + unbound + " would be ignored: no Sumi binder handles it."
                            + " For @KafkaListener methods add io.sumi:sumi-binder-spring-kafka (with spring-kafka);"
                            + " for @RabbitListener methods io.sumi:sumi-binder-spring-amqp (with spring-rabbit);"
                            + " for @JmsListener methods io.sumi:sumi-binder-spring-jms (with spring-jms);"
                            + " for Spring Cloud Stream function beans add io.sumi:sumi-binder-spring-cloud-stream"
                            + " (and check that sumi.* auto-configuration is not excluded)");
        }
    }

    /** A Spring AMQP listener method, or one taking an AMQP message: the Rabbit binder's (checked by name). */
    static boolean isRabbitHandler(Method method) {
        for (java.lang.annotation.Annotation annotation : method.getAnnotations()) {
            String name = annotation.annotationType().getName();
            if (name.startsWith("org.springframework.amqp.rabbit.annotation.Rabbit")) {
                return true;
            }
        }
        for (Class<?> type : method.getParameterTypes()) {
            if (type.getName().equals("org.springframework.amqp.core.Message")) {
                return true;
            }
        }
        return false;
    }

    /** A Spring JMS listener method, or one taking a JMS message: the JMS binder's (checked by name). */
    static boolean isJmsHandler(Method method) {
        for (java.lang.annotation.Annotation annotation : method.getAnnotations()) {
            if (annotation.annotationType().getName().startsWith("org.springframework.jms.annotation.JmsListener")) {
                return true;
            }
        }
        for (Class<?> type : method.getParameterTypes()) {
            if (type.getName().startsWith("jakarta.jms.")
                    && type.getSimpleName().endsWith("Message")) {
                return true;
            }
        }
        return false;
    }

    /** Every {@link IdempotentHandler} method of every bean class, with the class it was found on. */
    Map<Method, Class<?>> handlers() {
        Map<Method, Class<?>> handlers = new java.util.LinkedHashMap<>();
        for (String name : beanFactory.getBeanDefinitionNames()) {
            Class<?> type = beanFactory.getType(name, false);
            if (type == null) {
                continue;
            }
            Class<?> userClass = AopUtils.isAopProxy(type) ? type.getSuperclass() : ClassUtils.getUserClass(type);
            MethodIntrospector.selectMethods(userClass, (MethodIntrospector.MetadataLookup<IdempotentHandler>)
                            method -> AnnotatedElementUtils.findMergedAnnotation(method, IdempotentHandler.class))
                    .keySet()
                    .forEach(method -> handlers.putIfAbsent(method, userClass));
        }
        return handlers;
    }

    private boolean hasBean(String className) {
        if (!ClassUtils.isPresent(className, beanFactory.getBeanClassLoader())) {
            return false;
        }
        return beanFactory.getBeanNamesForType(
                                ClassUtils.resolveClassName(className, beanFactory.getBeanClassLoader()), true, false)
                        .length
                > 0;
    }
}
