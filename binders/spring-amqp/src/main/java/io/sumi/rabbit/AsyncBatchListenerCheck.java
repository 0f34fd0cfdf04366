package io.sumi.rabbit;

import io.sumi.consumer.IdempotentHandler;
import io.sumi.consumer.ListenerReturnTypes;
import io.sumi.consumer.binder.IdempotentHandlerInterceptorSupport;
import java.lang.reflect.Method;
import java.util.Set;
import org.springframework.amqp.rabbit.listener.AbstractMessageListenerContainer;
import org.springframework.amqp.rabbit.listener.SimpleMessageListenerContainer;
import org.springframework.amqp.rabbit.listener.adapter.MessagingMessageListenerAdapter;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.messaging.handler.invocation.InvocableHandlerMethod;

/**
 * Refuses, when Sumi's advice is put on a container, a consumer-batch container
 * ({@code consumerBatchEnabled}) whose {@code @IdempotentHandler} listener returns a
 * {@code CompletableFuture} or {@code Mono}, through the core's one return-type rule
 * ({@link ListenerReturnTypes#check}): the container's shape, which the method does not show,
 * makes it a batch listener, and Sumi completes a batch when the method returns, so every batch
 * would be refused when delivered (left unacknowledged on a MANUAL container).
 */
final class AsyncBatchListenerCheck {

    private AsyncBatchListenerCheck() {}

    /**
     * @throws IllegalStateException if {@code container} delivers consumer batches to an
     *     asynchronous {@code @IdempotentHandler} listener, saying which and what to do
     */
    static void check(AbstractMessageListenerContainer container) {
        if (!(container instanceof SimpleMessageListenerContainer simple)
                || !simple.isConsumerBatchEnabled()
                || !(container.getMessageListener() instanceof MessagingMessageListenerAdapter adapter)
                || !adapter.isAsyncReplies()) {
            return;
        }
        String name = "the consumer-batch RabbitMQ listener container '" + container.getListenerId() + "'";
        guardedMethods(adapter).forEach(method -> ListenerReturnTypes.checkBatch(method, name));
    }

    /**
     * The adapter's {@code @IdempotentHandler} method; for a class-level {@code @RabbitListener}
     * (or an unknown Spring AMQP) every {@code @IdempotentHandler} method of its bean.
     */
    private static Set<Method> guardedMethods(MessagingMessageListenerAdapter adapter) {
        // The handler adapter's type differs between Spring AMQP 4.0 and 4.1 (SpringAmqpLines).
        Object handler = SpringAmqpLines.handlerAdapter(adapter);
        if (handler == null) {
            return Set.of();
        }
        if (SpringAmqpLines.field(handler, "invokerHandlerMethod") instanceof InvocableHandlerMethod invocable) {
            Method method = invocable.getMethod();
            return AnnotatedElementUtils.hasAnnotation(method, IdempotentHandler.class) ? Set.of(method) : Set.of();
        }
        Object bean = SpringAmqpLines.bean(handler);
        return bean == null ? Set.of() : IdempotentHandlerInterceptorSupport.annotatedMethods(bean);
    }
}
