package io.sumi.rabbit;

import io.sumi.consumer.IdempotentHandler;
import java.lang.reflect.Method;
import org.aopalliance.aop.Advice;
import org.springframework.aop.Pointcut;
import org.springframework.aop.support.AbstractPointcutAdvisor;
import org.springframework.aop.support.ComposablePointcut;
import org.springframework.aop.support.StaticMethodMatcher;
import org.springframework.aop.support.annotation.AnnotationMatchingPointcut;
import org.springframework.core.Ordered;

/**
 * Applies the {@link IdempotentRabbitHandlerInterceptor} to {@link IdempotentHandler} methods that
 * are Spring AMQP listeners ({@code @RabbitListener}, {@code @RabbitHandler}) or take an AMQP
 * {@code Message}: the Kafka binder's advisor leaves exactly these alone, so an application with
 * both binders claims every message once. Ordered just before Spring's transaction advice, as the
 * Kafka binder's is.
 */
public final class IdempotentRabbitHandlerAdvisor extends AbstractPointcutAdvisor {

    private static final long serialVersionUID = 1L;

    private final transient IdempotentRabbitHandlerInterceptor interceptor;

    public IdempotentRabbitHandlerAdvisor(IdempotentRabbitHandlerInterceptor interceptor) {
        this.interceptor = interceptor;
        setOrder(Ordered.LOWEST_PRECEDENCE - 1);
    }

    @Override
    public Pointcut getPointcut() {
        return new ComposablePointcut(new AnnotationMatchingPointcut(null, IdempotentHandler.class, true))
                .intersection(new StaticMethodMatcher() {
                    @Override
                    public boolean matches(Method method, Class<?> targetClass) {
                        return guards(method, targetClass);
                    }
                });
    }

    /** Whether this binder guards {@code method} (an {@code @IdempotentHandler} method of {@code targetClass}). */
    public static boolean guards(Method method, Class<?> targetClass) {
        return IdempotentRabbitHandlerInterceptor.isListenerMethod(method, targetClass)
                || IdempotentRabbitHandlerInterceptor.hasAmqpMessageParameter(method);
    }

    @Override
    public Advice getAdvice() {
        return interceptor;
    }

    /** The interceptor this advisor applies. */
    public IdempotentRabbitHandlerInterceptor interceptor() {
        return interceptor;
    }
}
