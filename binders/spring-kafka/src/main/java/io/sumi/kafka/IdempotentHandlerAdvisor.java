package io.sumi.kafka;

import io.sumi.consumer.IdempotentHandler;
import org.aopalliance.aop.Advice;
import org.springframework.aop.Pointcut;
import org.springframework.aop.support.AbstractPointcutAdvisor;
import org.springframework.aop.support.annotation.AnnotationMatchingPointcut;
import org.springframework.core.Ordered;

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
        return new AnnotationMatchingPointcut(null, IdempotentHandler.class, true);
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
