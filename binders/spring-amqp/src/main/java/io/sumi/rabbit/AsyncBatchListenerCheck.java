package io.sumi.rabbit;

import io.sumi.consumer.IdempotentHandler;
import io.sumi.consumer.ListenerReturnTypes;
import io.sumi.consumer.binder.IdempotentHandlerInterceptorSupport;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.Set;
import org.jspecify.annotations.Nullable;
import org.springframework.amqp.rabbit.listener.AbstractMessageListenerContainer;
import org.springframework.amqp.rabbit.listener.SimpleMessageListenerContainer;
import org.springframework.amqp.rabbit.listener.adapter.HandlerAdapter;
import org.springframework.amqp.rabbit.listener.adapter.MessagingMessageListenerAdapter;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.messaging.handler.invocation.InvocableHandlerMethod;
import org.springframework.util.ReflectionUtils;

/**
 * Refuses, when Sumi's advice is put on a container, a consumer-batch container
 * ({@code consumerBatchEnabled}) whose {@code @IdempotentHandler} listener returns a
 * {@code CompletableFuture} or {@code Mono}, through the core's one return-type rule
 * ({@link ListenerReturnTypes#check}): the container's shape, which the method does not show,
 * makes it a batch listener, and Sumi completes a batch when the method returns, so every batch
 * would be refused when delivered (left unacknowledged on a MANUAL container).
 */
final class AsyncBatchListenerCheck {

    private static final @Nullable Field HANDLER_ADAPTER =
            ReflectionUtils.findField(MessagingMessageListenerAdapter.class, "handlerAdapter");
    private static final @Nullable Field INVOKER_HANDLER_METHOD =
            ReflectionUtils.findField(HandlerAdapter.class, "invokerHandlerMethod");

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
        if (HANDLER_ADAPTER == null) {
            return Set.of();
        }
        ReflectionUtils.makeAccessible(HANDLER_ADAPTER);
        if (!(ReflectionUtils.getField(HANDLER_ADAPTER, adapter) instanceof HandlerAdapter handler)) {
            return Set.of();
        }
        if (INVOKER_HANDLER_METHOD != null) {
            ReflectionUtils.makeAccessible(INVOKER_HANDLER_METHOD);
            if (ReflectionUtils.getField(INVOKER_HANDLER_METHOD, handler) instanceof InvocableHandlerMethod invocable) {
                Method method = invocable.getMethod();
                return AnnotatedElementUtils.hasAnnotation(method, IdempotentHandler.class) ? Set.of(method) : Set.of();
            }
        }
        return IdempotentHandlerInterceptorSupport.annotatedMethods(handler.getBean());
    }
}
