package io.sumi.kafka;

import io.sumi.consumer.IdempotentHandler;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import org.jspecify.annotations.Nullable;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.kafka.listener.AbstractMessageListenerContainer;
import org.springframework.kafka.listener.DelegatingMessageListener;
import org.springframework.kafka.listener.adapter.HandlerAdapter;
import org.springframework.kafka.listener.adapter.KafkaBackoffAwareMessageListenerAdapter;
import org.springframework.kafka.listener.adapter.MessagingMessageListenerAdapter;
import org.springframework.kafka.listener.adapter.RecordMessagingMessageListenerAdapter;
import org.springframework.messaging.handler.invocation.InvocableHandlerMethod;
import org.springframework.util.ReflectionUtils;

/**
 * Refuses, before the containers start, an {@code @IdempotentHandler} record listener returning a
 * {@code CompletableFuture} or {@code Mono} on a container whose failed futures Spring Kafka never
 * retries.
 *
 * <p>Why: Spring Kafka (4.0) hands a failed asynchronous result to the error handler only for
 * retry-topic containers ({@code @RetryableTopic}, a {@code RetryTopicConfiguration} bean): its
 * listener consumer wires the async-failure callback only when the listener is a
 * {@link KafkaBackoffAwareMessageListenerAdapter}. On any other container a failed future is logged
 * ("Future, Mono, or suspend function was completed with an exception") and its record
 * acknowledged: the offset is committed, the work is neither retried nor dead-lettered, whatever the
 * error handler (README step 4's {@code DefaultErrorHandler} included), with or without Sumi. Sumi
 * releases the row, but no redelivery comes to run it again. Batch listeners are not checked here:
 * an asynchronous batch method is refused when a batch is delivered, before anything is claimed.
 */
final class AsyncRecordListenerCheck {

    private static final @Nullable Field HANDLER_METHOD =
            ReflectionUtils.findField(MessagingMessageListenerAdapter.class, "handlerMethod");
    private static final @Nullable Field INVOKER_HANDLER_METHOD =
            ReflectionUtils.findField(HandlerAdapter.class, "invokerHandlerMethod");

    private AsyncRecordListenerCheck() {}

    /**
     * @throws IllegalStateException if {@code container} runs an asynchronous {@code @IdempotentHandler}
     *     record listener and is not a retry-topic container, saying what to do
     */
    static void check(AbstractMessageListenerContainer<?, ?> container) {
        Object listener = container.getContainerProperties().getMessageListener();
        boolean retryTopic = false;
        while (listener instanceof DelegatingMessageListener<?> delegating && delegating.getDelegate() != listener) {
            retryTopic |= listener instanceof KafkaBackoffAwareMessageListenerAdapter<?, ?>;
            listener = delegating.getDelegate();
        }
        if (retryTopic
                || !(listener instanceof RecordMessagingMessageListenerAdapter<?, ?> adapter)
                || !adapter.isAsyncReplies()
                || !guarded(adapter, container)) {
            return;
        }
        throw new IllegalStateException("Kafka listener container '" + container.getListenerId()
                + "' runs an @IdempotentHandler record listener that returns a CompletableFuture or Mono, but it is"
                + " not a retry-topic container: Spring Kafka hands a failed future to the error handler only with"
                + " non-blocking retries (@RetryableTopic or a RetryTopicConfiguration bean). Here a failed future would"
                + " be logged and its offset committed, whatever the error handler: the work would never run again."
                + " Put @RetryableTopic on the listener, or return a value (wait for the work inside the method)."
                + " See docs/consumer-semantics.md, \"Asynchronous handlers\"");
    }

    /** Whether the adapter's method is an {@code @IdempotentHandler}; its bean's methods when the method is not known. */
    private static boolean guarded(
            MessagingMessageListenerAdapter<?, ?> adapter, AbstractMessageListenerContainer<?, ?> container) {
        Method method = method(adapter);
        if (method != null) {
            return AnnotatedElementUtils.hasAnnotation(method, IdempotentHandler.class);
        }
        return SumiErrorHandlerConfigurer.runsIdempotentHandler(container) == Boolean.TRUE;
    }

    /** The listener method, or {@code null} (a class-level {@code @KafkaListener}, an unknown Spring Kafka). */
    private static @Nullable Method method(MessagingMessageListenerAdapter<?, ?> adapter) {
        if (HANDLER_METHOD == null || INVOKER_HANDLER_METHOD == null) {
            return null;
        }
        ReflectionUtils.makeAccessible(HANDLER_METHOD);
        if (!(ReflectionUtils.getField(HANDLER_METHOD, adapter) instanceof HandlerAdapter handler)) {
            return null;
        }
        ReflectionUtils.makeAccessible(INVOKER_HANDLER_METHOD);
        return ReflectionUtils.getField(INVOKER_HANDLER_METHOD, handler) instanceof InvocableHandlerMethod invocable
                ? invocable.getMethod()
                : null;
    }
}
