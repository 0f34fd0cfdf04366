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

    /**
     * The listener annotations of the other broker binders (Spring AMQP, Spring JMS), by name:
     * this binder depends on neither.
     */
    private static final Set<String> OTHER_LISTENER_ANNOTATIONS = Set.of(
            "org.springframework.amqp.rabbit.annotation.RabbitListener",
            "org.springframework.amqp.rabbit.annotation.RabbitListeners",
            "org.springframework.amqp.rabbit.annotation.RabbitHandler",
            "org.springframework.jms.annotation.JmsListener",
            "org.springframework.jms.annotation.JmsListeners");

    /** The other brokers' message types: Spring AMQP's, and JMS's. */
    private static final Set<String> OTHER_MESSAGE_TYPES = Set.of(
            "org.springframework.amqp.core.Message",
            "jakarta.jms.Message",
            "jakarta.jms.TextMessage",
            "jakarta.jms.BytesMessage",
            "jakarta.jms.MapMessage",
            "jakarta.jms.ObjectMessage",
            "jakarta.jms.StreamMessage");

    /**
     * Whether another Sumi binder guards {@code method}: a Spring AMQP listener
     * ({@code @RabbitListener}, {@code @RabbitHandler}) or a method taking an AMQP {@code Message}
     * belongs to the Spring AMQP binder, a {@code @JmsListener} method or a method taking a JMS
     * message to the Spring JMS binder, so that an application with several binders claims each
     * message once.
     */
    public static boolean belongsToAnotherBinder(Method method) {
        for (Annotation annotation : method.getAnnotations()) {
            if (OTHER_LISTENER_ANNOTATIONS.contains(annotation.annotationType().getName())) {
                return true;
            }
        }
        for (Class<?> type : method.getParameterTypes()) {
            if (OTHER_MESSAGE_TYPES.contains(type.getName())) {
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
