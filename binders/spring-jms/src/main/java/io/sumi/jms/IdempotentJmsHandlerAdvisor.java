package io.sumi.jms;

import io.sumi.consumer.IdempotentHandler;
import io.sumi.consumer.binder.IdempotentHandlerAdvisorSupport;
import io.sumi.consumer.binder.ListenerBinders;
import io.sumi.jms.internal.JmsListenerBinder;

/**
 * Applies the {@link IdempotentJmsHandlerInterceptor} to the {@link IdempotentHandler} methods the
 * Spring JMS binder owns ({@link ListenerBinders}): Spring JMS listeners ({@code @JmsListener}) and
 * methods taking a JMS {@code Message}, so an application with several binders claims every
 * message once. Ordered just before Spring's transaction advice, as every binder's advisor
 * ({@link IdempotentHandlerAdvisorSupport}).
 */
public final class IdempotentJmsHandlerAdvisor extends IdempotentHandlerAdvisorSupport {

    private static final long serialVersionUID = 1L;

    private final transient IdempotentJmsHandlerInterceptor interceptor;

    public IdempotentJmsHandlerAdvisor(IdempotentJmsHandlerInterceptor interceptor) {
        this(interceptor, ListenerBinders.installed());
    }

    /** An advisor that decides ownership among {@code binders} (tests, hand-assembled applications). */
    public IdempotentJmsHandlerAdvisor(IdempotentJmsHandlerInterceptor interceptor, ListenerBinders binders) {
        super(JmsListenerBinder.class, interceptor, binders);
        this.interceptor = interceptor;
    }

    /** The interceptor this advisor applies. */
    public IdempotentJmsHandlerInterceptor interceptor() {
        return interceptor;
    }
}
