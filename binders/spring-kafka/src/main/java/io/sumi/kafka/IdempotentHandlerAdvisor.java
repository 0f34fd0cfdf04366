package io.sumi.kafka;

import io.sumi.consumer.IdempotentHandler;
import java.lang.annotation.Annotation;
import java.lang.reflect.Method;
import java.util.Set;
import org.aopalliance.aop.Advice;
import org.springframework.aop.Pointcut;
import org.springframework.aop.support.AbstractPointcutAdvisor;
import org.springframework.aop.support.ComposablePointcut;
import org.springframework.aop.support.StaticMethodMatcher;
import org.springframework.aop.support.annotation.AnnotationMatchingPointcut;
import org.springframework.context.annotation.Bean;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.AnnotatedElementUtils;

/**
 * Applies the {@link IdempotentHandlerInterceptor} to {@link IdempotentHandler} methods. Ordered
 * just before Spring's transaction advice ({@code LOWEST_PRECEDENCE - 1}), so Sumi's claim and
 * the method's own {@code @Transactional} transaction are one transaction in transactional mode
 * (Sumi begins it, the method's advice joins it).
 */
public final class IdempotentHandlerAdvisor extends AbstractPointcutAdvisor {

    private static final long serialVersionUID = 1L;

    private final transient IdempotentHandlerInterceptor interceptor;

    public IdempotentHandlerAdvisor(IdempotentHandlerInterceptor interceptor) {
        this.interceptor = interceptor;
        setOrder(Ordered.LOWEST_PRECEDENCE - 1);
    }

    @Override
    public Pointcut getPointcut() {
        // @Bean methods are excluded: there the annotation marks a functional bean (Spring Cloud
        // Stream) that another binder wraps; advising the factory method would run bean creation
        // as a message handler.
        return new ComposablePointcut(new AnnotationMatchingPointcut(null, IdempotentHandler.class, true))
                .intersection(new StaticMethodMatcher() {
                    @Override
                    public boolean matches(Method method, Class<?> targetClass) {
                        return !AnnotatedElementUtils.hasAnnotation(method, Bean.class)
                                && !belongsToAnotherBinder(method);
                    }
                });
    }

    /** Spring AMQP's listener annotations and message type, by name: this binder does not depend on Spring AMQP. */
    private static final Set<String> RABBIT_LISTENER_ANNOTATIONS = Set.of(
            "org.springframework.amqp.rabbit.annotation.RabbitListener",
            "org.springframework.amqp.rabbit.annotation.RabbitListeners",
            "org.springframework.amqp.rabbit.annotation.RabbitHandler");

    private static final String AMQP_MESSAGE = "org.springframework.amqp.core.Message";

    /**
     * Whether another Sumi binder guards {@code method}: a Spring AMQP listener
     * ({@code @RabbitListener}, {@code @RabbitHandler}) or a method taking an AMQP {@code Message}
     * belongs to the Spring AMQP binder, so that an application with both binders claims each
     * message once.
     */
    public static boolean belongsToAnotherBinder(Method method) {
        for (Annotation annotation : method.getAnnotations()) {
            if (RABBIT_LISTENER_ANNOTATIONS.contains(annotation.annotationType().getName())) {
                return true;
            }
        }
        for (Class<?> type : method.getParameterTypes()) {
            if (type.getName().equals(AMQP_MESSAGE)) {
                return true;
            }
        }
        return false;
    }

    @Override
    public Advice getAdvice() {
        return interceptor;
    }

    /** The interceptor this advisor applies. */
    public IdempotentHandlerInterceptor interceptor() {
        return interceptor;
    }
}
