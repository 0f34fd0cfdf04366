package io.sumi.rabbit;

import io.sumi.consumer.IdempotentHandler;
import io.sumi.consumer.binder.IdempotentHandlerAdvisorSupport;
import io.sumi.consumer.binder.ListenerBinders;
import io.sumi.rabbit.internal.RabbitListenerBinder;

/**
 * Applies the {@link IdempotentRabbitHandlerInterceptor} to the {@link IdempotentHandler} methods
 * the Spring AMQP binder owns ({@link ListenerBinders}): Spring AMQP listeners
 * ({@code @RabbitListener}, {@code @RabbitHandler}) and methods taking an AMQP {@code Message}, so
 * an application with several binders claims every message once. Ordered just before Spring's
 * transaction advice, as every binder's advisor ({@link IdempotentHandlerAdvisorSupport}).
 */
public final class IdempotentRabbitHandlerAdvisor extends IdempotentHandlerAdvisorSupport {

    private static final long serialVersionUID = 1L;

    private final transient IdempotentRabbitHandlerInterceptor interceptor;

    public IdempotentRabbitHandlerAdvisor(IdempotentRabbitHandlerInterceptor interceptor) {
        this(interceptor, ListenerBinders.installed());
    }

    /** An advisor that decides ownership among {@code binders} (tests, hand-assembled applications). */
    public IdempotentRabbitHandlerAdvisor(IdempotentRabbitHandlerInterceptor interceptor, ListenerBinders binders) {
        super(RabbitListenerBinder.class, interceptor, binders);
        this.interceptor = interceptor;
    }

    /** The interceptor this advisor applies. */
    public IdempotentRabbitHandlerInterceptor interceptor() {
        return interceptor;
    }
}
