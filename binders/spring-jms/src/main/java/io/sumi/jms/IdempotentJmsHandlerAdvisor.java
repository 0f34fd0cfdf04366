package io.sumi.jms;

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
 * Applies the {@link IdempotentJmsHandlerInterceptor} to {@link IdempotentHandler} methods that
 * are Spring JMS listeners ({@code @JmsListener}) or take a JMS {@code Message}: the Kafka binder's
 * advisor leaves exactly these alone, so an application with several binders claims every message
 * once. Ordered just before Spring's transaction advice, as the other binders' are.
 */
public final class IdempotentJmsHandlerAdvisor extends AbstractPointcutAdvisor {

    private static final long serialVersionUID = 1L;

    private final transient IdempotentJmsHandlerInterceptor interceptor;

    public IdempotentJmsHandlerAdvisor(IdempotentJmsHandlerInterceptor interceptor) {
        this.interceptor = interceptor;
        setOrder(Ordered.LOWEST_PRECEDENCE - 1);
    }

    @Override
    public Pointcut getPointcut() {
        return new ComposablePointcut(new AnnotationMatchingPointcut(null, IdempotentHandler.class, true))
                .intersection(new StaticMethodMatcher() {
                    @Override
                    public boolean matches(Method method, Class<?> targetClass) {
                        return guards(method);
                    }
                });
    }

    /** Whether this binder guards {@code method} (an {@code @IdempotentHandler} method). */
    public static boolean guards(Method method) {
        return IdempotentJmsHandlerInterceptor.isListenerMethod(method)
                || IdempotentJmsHandlerInterceptor.hasJmsMessageParameter(method);
    }

    @Override
    public Advice getAdvice() {
        return interceptor;
    }

    /** The interceptor this advisor applies. */
    public IdempotentJmsHandlerInterceptor interceptor() {
        return interceptor;
    }
}
