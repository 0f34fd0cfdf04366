package io.sumi.consumer.binder;

import io.sumi.consumer.IdempotentHandler;
import java.lang.reflect.Method;
import java.util.Objects;
import org.aopalliance.aop.Advice;
import org.aopalliance.intercept.MethodInterceptor;
import org.springframework.aop.Pointcut;
import org.springframework.aop.support.AbstractPointcutAdvisor;
import org.springframework.aop.support.ComposablePointcut;
import org.springframework.aop.support.StaticMethodMatcher;
import org.springframework.aop.support.annotation.AnnotationMatchingPointcut;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.AnnotatedElementUtils;

/**
 * The advisor every binder applies its interceptor with: it matches the {@link IdempotentHandler}
 * methods (on the method or its class) that {@link ListenerBinders} gives to the binder, and is
 * ordered just before Spring's transaction advice ({@code LOWEST_PRECEDENCE - 1}), so that in
 * transactional mode Sumi's claim and the method's own {@code @Transactional} transaction are one
 * transaction (Sumi begins it, the method's advice joins it).
 *
 * <p>{@code @Bean} methods are never matched: there the annotation marks a functional bean that
 * the Spring Cloud Stream binder wraps; advising the factory method would run bean creation as a
 * message handler.
 *
 * @since 0.1.0
 */
public abstract class IdempotentHandlerAdvisorSupport extends AbstractPointcutAdvisor {

    private static final long serialVersionUID = 1L;

    private static final String BEAN_ANNOTATION = "org.springframework.context.annotation.Bean";

    private final transient MethodInterceptor interceptor;
    private final transient Class<? extends ListenerBinder> binder;
    private final transient ListenerBinders binders;

    /**
     * @param binder the binder whose methods this advisor guards (compared by class)
     * @param interceptor the binder's interceptor
     * @param binders the registered binders ({@link ListenerBinders#installed()})
     */
    protected IdempotentHandlerAdvisorSupport(
            Class<? extends ListenerBinder> binder, MethodInterceptor interceptor, ListenerBinders binders) {
        this.binder = Objects.requireNonNull(binder, "binder");
        this.interceptor = Objects.requireNonNull(interceptor, "interceptor");
        this.binders = Objects.requireNonNull(binders, "binders");
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

    /** Whether this advisor guards {@code method} of {@code targetClass} (whatever its annotations). */
    public boolean guards(Method method, Class<?> targetClass) {
        return !AnnotatedElementUtils.isAnnotated(method, BEAN_ANNOTATION) && binders.owns(binder, method, targetClass);
    }

    @Override
    public Advice getAdvice() {
        return interceptor;
    }
}
