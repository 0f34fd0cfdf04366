package io.sumi.rabbit.internal;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.Arrays;
import org.aopalliance.aop.Advice;
import org.jspecify.annotations.Nullable;
import org.springframework.amqp.rabbit.config.AbstractRetryOperationsInterceptorFactoryBean;
import org.springframework.amqp.rabbit.config.StatelessRetryOperationsInterceptor;
import org.springframework.amqp.rabbit.config.StatelessRetryOperationsInterceptorFactoryBean;
import org.springframework.amqp.rabbit.listener.AbstractMessageListenerContainer;
import org.springframework.amqp.rabbit.listener.SimpleMessageListenerContainer;
import org.springframework.amqp.rabbit.retry.MessageBatchRecoverer;
import org.springframework.amqp.rabbit.retry.MessageRecoverer;
import org.springframework.util.ReflectionUtils;

/**
 * Refuses a consumer-batch container whose stateless retry interceptor would acknowledge a batch
 * once its retries are spent: Spring AMQP's interceptor hands a batch only to a
 * {@link MessageBatchRecoverer} and does nothing with any other recoverer (Boot's default
 * {@code RejectAndDontRequeueRecoverer} included), or with the factory bean's "no recoverer", which
 * logs "Message(s) dropped on recovery"; the container then acknowledges the batch, and its
 * messages leave the queue without reaching the dead-letter exchange.
 *
 * <p>The interceptor keeps its recoverer as a function bound to the factory bean that built it
 * (Boot and {@code RetryInterceptorBuilder} both build it so); Spring AMQP exposes neither, so they
 * are read by reflection. A factory bean subclass that overrides {@code recover} decides on its own
 * (not refused); a shape Sumi does not know is refused, since Sumi cannot tell that no batch is lost.
 */
public final class BatchRecoveryCheck {

    private static final @Nullable Field RECOVERER =
            ReflectionUtils.findField(StatelessRetryOperationsInterceptor.class, "recoverer");

    private static final @Nullable Field MESSAGE_RECOVERER =
            ReflectionUtils.findField(AbstractRetryOperationsInterceptorFactoryBean.class, "messageRecoverer");

    private BatchRecoveryCheck() {}

    /**
     * Refuses a consumer-batch container whose advice chain would acknowledge a failed batch.
     *
     * @param factory names the container factory in the refusal (its bean name)
     * @throws IllegalStateException if {@code container} is a consumer-batch container and an advice
     *     of {@code chain} is a stateless retry interceptor that would acknowledge a batch whose
     *     retries are spent
     */
    public static void check(AbstractMessageListenerContainer container, Advice @Nullable [] chain, String factory) {
        if (chain == null
                || !(container instanceof SimpleMessageListenerContainer simple)
                || !simple.isConsumerBatchEnabled()) {
            return;
        }
        for (Advice advice : chain) {
            if (advice instanceof StatelessRetryOperationsInterceptor retry) {
                String problem = problem(retry);
                if (problem != null) {
                    throw new IllegalStateException("Rabbit listener container '" + container.getListenerId()
                            + "' (queues " + Arrays.toString(container.getQueueNames()) + ", container factory '"
                            + factory + "') receives consumer batches and retries them with a stateless retry"
                            + " interceptor (spring.rabbitmq.listener.simple.retry.enabled=true or a"
                            + " RetryInterceptorBuilder) whose " + problem + ": Spring AMQP then acknowledges a batch"
                            + " whose retries are spent, and its messages leave the queue without reaching the"
                            + " dead-letter exchange. Declare a MessageRecoverer bean that implements"
                            + " MessageBatchRecoverer (io.sumi.rabbit.RejectAndDontRequeueBatchRecoverer rejects the"
                            + " batch to the dead-letter exchange; without a MessageRecoverer bean the Sumi starter"
                            + " declares that one), give the interceptor such a recoverer, or turn the retry off for"
                            + " this factory. See docs/rabbitmq.md, \"Boot's listener retry and Sumi\"");
                }
            }
        }
    }

    /** Why {@code retry} loses a spent batch, or {@code null} if it does not. */
    private static @Nullable String problem(StatelessRetryOperationsInterceptor retry) {
        if (RECOVERER == null || MESSAGE_RECOVERER == null) {
            return "recoverer Sumi cannot read (a Spring AMQP version Sumi does not know)";
        }
        ReflectionUtils.makeAccessible(RECOVERER);
        Object function = ReflectionUtils.getField(RECOVERER, retry);
        if (function == null) {
            return null; // no recoverer: the interceptor throws the last failure, the container decides
        }
        AbstractRetryOperationsInterceptorFactoryBean factoryBean = boundFactoryBean(function);
        if (factoryBean == null) {
            return "recoverer function " + function.getClass().getName()
                    + " Sumi cannot read (a Spring AMQP version Sumi does not know)";
        }
        if (overridesRecover(factoryBean.getClass())) {
            return null; // the application's own recovery decides
        }
        ReflectionUtils.makeAccessible(MESSAGE_RECOVERER);
        MessageRecoverer recoverer = (MessageRecoverer) ReflectionUtils.getField(MESSAGE_RECOVERER, factoryBean);
        if (recoverer == null) {
            return "has no MessageRecoverer (it logs \"Message(s) dropped on recovery\")";
        }
        if (recoverer instanceof MessageBatchRecoverer) {
            return null;
        }
        return "MessageRecoverer " + recoverer.getClass().getName() + " is not a MessageBatchRecoverer";
    }

    /** The factory bean a {@code factoryBean::recover} function is bound to, or {@code null}. */
    private static @Nullable AbstractRetryOperationsInterceptorFactoryBean boundFactoryBean(Object function) {
        for (Field field : function.getClass().getDeclaredFields()) {
            if (Modifier.isStatic(field.getModifiers())
                    || !AbstractRetryOperationsInterceptorFactoryBean.class.isAssignableFrom(field.getType())) {
                continue;
            }
            if (!field.trySetAccessible()) {
                return null;
            }
            try {
                return (AbstractRetryOperationsInterceptorFactoryBean) field.get(function);
            } catch (IllegalAccessException ex) {
                return null;
            }
        }
        return null;
    }

    private static boolean overridesRecover(Class<?> type) {
        Method recover = ReflectionUtils.findMethod(type, "recover", Object[].class, Throwable.class);
        return recover != null && recover.getDeclaringClass() != StatelessRetryOperationsInterceptorFactoryBean.class;
    }
}
