package io.sumi.kafka;

import io.sumi.consumer.IdempotentHandler;
import java.lang.reflect.Method;
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
                        return !AnnotatedElementUtils.hasAnnotation(method, Bean.class);
                    }
                });
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
