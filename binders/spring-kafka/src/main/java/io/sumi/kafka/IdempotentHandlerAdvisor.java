package io.sumi.kafka;

import io.sumi.consumer.IdempotentHandler;
import io.sumi.consumer.binder.IdempotentHandlerAdvisorSupport;
import io.sumi.consumer.binder.ListenerBinders;
import io.sumi.kafka.internal.KafkaListenerBinder;

/**
 * Applies the {@link IdempotentHandlerInterceptor} to the {@link IdempotentHandler} methods the
 * Spring Kafka binder owns ({@link ListenerBinders}): {@code @KafkaListener} / {@code @KafkaHandler}
 * methods, methods taking Kafka records, and annotated service methods that no other binder on
 * the class path guards. Ordered just before Spring's transaction advice, as every binder's
 * advisor ({@link IdempotentHandlerAdvisorSupport}).
 */
public final class IdempotentHandlerAdvisor extends IdempotentHandlerAdvisorSupport {

    private static final long serialVersionUID = 1L;

    private final transient IdempotentHandlerInterceptor interceptor;

    public IdempotentHandlerAdvisor(IdempotentHandlerInterceptor interceptor) {
        this(interceptor, ListenerBinders.installed());
    }

    /** An advisor that decides ownership among {@code binders} (tests, hand-assembled applications). */
    public IdempotentHandlerAdvisor(IdempotentHandlerInterceptor interceptor, ListenerBinders binders) {
        super(KafkaListenerBinder.class, interceptor, binders);
        this.interceptor = interceptor;
    }

    /** The interceptor this advisor applies. */
    public IdempotentHandlerInterceptor interceptor() {
        return interceptor;
    }
}
