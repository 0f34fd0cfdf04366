package io.sumi.rabbit.internal;

import java.lang.reflect.AccessibleObject;
import java.lang.reflect.Method;
import java.util.Objects;
import org.aopalliance.aop.Advice;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.jspecify.annotations.Nullable;
import org.springframework.aop.ProxyMethodInvocation;

/**
 * An application's advice in a listener container's chain whose every {@code proceed()} runs the
 * rest of the chain, Sumi's inner advice included.
 *
 * <p>Why: Spring AMQP 4's {@code StatelessRetryOperationsInterceptor} (what Boot's
 * {@code spring.rabbitmq.listener.*.retry.enabled=true} installs) retries by calling
 * {@code proceed()} again on the invocation it was given. A Spring AOP invocation remembers how
 * far along the chain it got, so a second {@code proceed()} starts after the last advice and calls
 * the listener directly: Sumi's inner advice, which keeps Sumi's refusals (a busy key, a missing
 * key, a spent budget) away from the retry, is skipped from the second attempt on, and a key that
 * turns busy during the retry is retried and dead-lettered (a consumer batch: acknowledged and
 * dropped, since Boot's default recoverer cannot recover a batch). Spring Retry's interceptor, which
 * Spring AMQP 3 used, proceeded on a fresh clone each time; this wrapper gives every advice that
 * behaviour: each {@code proceed()} it makes runs a clone of the invocation taken at this advice's
 * place in the chain.
 *
 * <p>Thread-safe if the advice it wraps is.
 */
public final class RepeatableProceedAdvice implements MethodInterceptor {

    private final MethodInterceptor advice;

    private RepeatableProceedAdvice(MethodInterceptor advice) {
        this.advice = Objects.requireNonNull(advice, "advice");
    }

    /**
     * {@code advice} wrapped, or as it is when it cannot proceed (an advice that is not a
     * {@link MethodInterceptor}, such as a before advice) or is wrapped already.
     */
    public static Advice of(Advice advice) {
        if (advice instanceof RepeatableProceedAdvice || !(advice instanceof MethodInterceptor interceptor)) {
            return advice;
        }
        return new RepeatableProceedAdvice(interceptor);
    }

    @Override
    public @Nullable Object invoke(MethodInvocation invocation) throws Throwable {
        if (!(invocation instanceof ProxyMethodInvocation proxied)) {
            return advice.invoke(invocation);
        }
        return advice.invoke(new Repeatable(proxied));
    }

    /** The invocation the wrapped advice sees: everything the original's, but each proceed on a fresh clone. */
    private static final class Repeatable implements ProxyMethodInvocation {

        private final ProxyMethodInvocation original;

        Repeatable(ProxyMethodInvocation original) {
            this.original = original;
        }

        @Override
        public @Nullable Object proceed() throws Throwable {
            // A clone starts where the original stands (just after the wrapped advice), with a copy
            // of its current arguments, so each attempt passes the rest of the chain again.
            return original.invocableClone().proceed();
        }

        @Override
        public Object getProxy() {
            return original.getProxy();
        }

        @Override
        public MethodInvocation invocableClone() {
            return original.invocableClone();
        }

        @Override
        public MethodInvocation invocableClone(@Nullable Object... arguments) {
            return original.invocableClone(arguments);
        }

        @Override
        public void setArguments(@Nullable Object... arguments) {
            original.setArguments(arguments);
        }

        @Override
        public void setUserAttribute(String key, @Nullable Object value) {
            original.setUserAttribute(key, value);
        }

        @Override
        public @Nullable Object getUserAttribute(String key) {
            return original.getUserAttribute(key);
        }

        @Override
        public Method getMethod() {
            return original.getMethod();
        }

        @Override
        public @Nullable Object[] getArguments() {
            return original.getArguments();
        }

        @Override
        public @Nullable Object getThis() {
            return original.getThis();
        }

        @Override
        public AccessibleObject getStaticPart() {
            return original.getStaticPart();
        }
    }
}
