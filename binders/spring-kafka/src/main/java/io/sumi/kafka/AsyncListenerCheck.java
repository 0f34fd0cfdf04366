package io.sumi.kafka;

import io.sumi.consumer.IdempotentHandler;
import io.sumi.consumer.ListenerReturnTypes;
import io.sumi.consumer.binder.IdempotentHandlerInterceptorSupport;
import io.sumi.kafka.internal.ListenerDelegates;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.List;
import java.util.Set;
import org.jspecify.annotations.Nullable;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.kafka.listener.AbstractMessageListenerContainer;
import org.springframework.kafka.listener.adapter.BatchMessagingMessageListenerAdapter;
import org.springframework.kafka.listener.adapter.HandlerAdapter;
import org.springframework.kafka.listener.adapter.KafkaBackoffAwareMessageListenerAdapter;
import org.springframework.kafka.listener.adapter.MessagingMessageListenerAdapter;
import org.springframework.kafka.listener.adapter.RecordMessagingMessageListenerAdapter;
import org.springframework.messaging.handler.invocation.InvocableHandlerMethod;
import org.springframework.util.ReflectionUtils;

/**
 * Refuses, before the containers start, the asynchronous {@code @IdempotentHandler} listeners a
 * Kafka container cannot run safely, through the core's one return-type rule
 * ({@link ListenerReturnTypes#check}) applied to what the container shows and the method does not:
 *
 * <ul>
 *   <li>a batch listener returning a {@code CompletableFuture} or {@code Mono} (a batch container
 *   factory, a hand-built container with a batch adapter): Sumi completes a batch when the method
 *   returns, so every batch would be refused when delivered, retried and dead-lettered for a
 *   configuration mistake;</li>
 *   <li>a record listener returning one, unless the application accepts the loss window below
 *   ({@code sumi.kafka.allow-async-listeners}): Spring Kafka (4.0) acknowledges a failed
 *   asynchronous record before its retry-topic error handler runs
 *   ({@code MessagingMessageListenerAdapter.asyncFailure}), and the container commits that
 *   acknowledgement before the retry is published ({@code invokeErrorHandlerBySingleRecord}), so a
 *   JVM that dies, or a retry publish that fails, in that window loses the message;</li>
 *   <li>with that opt-in, a record listener returning one on a container that is not a retry-topic container. Spring
 *   Kafka (4.0) hands a failed asynchronous result to the error handler only for retry-topic
 *   containers ({@code @RetryableTopic}, a {@code RetryTopicConfiguration} bean): its listener
 *   consumer wires the async-failure callback only when the listener is a
 *   {@link KafkaBackoffAwareMessageListenerAdapter}. On any other container a failed future is
 *   logged ("Future, Mono, or suspend function was completed with an exception") and its record
 *   acknowledged: the offset is committed, the work is neither retried nor dead-lettered, whatever
 *   the error handler (README step 4's {@code DefaultErrorHandler} included), with or without Sumi.</li>
 * </ul>
 */
final class AsyncListenerCheck {

    private static final @Nullable Field HANDLER_METHOD =
            ReflectionUtils.findField(MessagingMessageListenerAdapter.class, "handlerMethod");
    private static final @Nullable Field INVOKER_HANDLER_METHOD =
            ReflectionUtils.findField(HandlerAdapter.class, "invokerHandlerMethod");

    private AsyncListenerCheck() {}

    /**
     * @param allowAsyncListeners whether the application accepts the loss window of an asynchronous
     *     record listener ({@code sumi.kafka.allow-async-listeners}); retry topics are required anyway
     * @throws IllegalStateException if {@code container} runs an asynchronous {@code @IdempotentHandler}
     *     batch listener, or record listener (without the opt-in, or without retry topics), saying
     *     which and what to do
     */
    static void check(AbstractMessageListenerContainer<?, ?> container, boolean allowAsyncListeners) {
        List<Object> chain =
                ListenerDelegates.chain(container.getContainerProperties().getMessageListener());
        boolean retryTopic = chain.stream().anyMatch(KafkaBackoffAwareMessageListenerAdapter.class::isInstance);
        Object listener = chain.isEmpty() ? null : chain.get(chain.size() - 1);
        if (listener instanceof BatchMessagingMessageListenerAdapter<?, ?> batch) {
            String name = "the batch Kafka listener container '" + container.getListenerId() + "'";
            guardedMethods(batch).forEach(method -> ListenerReturnTypes.checkBatch(method, name));
            return;
        }
        if (!(listener instanceof RecordMessagingMessageListenerAdapter<?, ?> adapter)
                || !adapter.isAsyncReplies()
                || !guarded(adapter, container)) {
            return;
        }
        if (!allowAsyncListeners) {
            throw new IllegalStateException(
                    "Kafka listener container '" + container.getListenerId()
                            + "' runs an @IdempotentHandler record listener that returns a CompletableFuture or Mono. Spring"
                            + " Kafka commits a failed future's offset before its retry is published (the record is"
                            + " acknowledged before the retry-topic error handler runs): a JVM that dies, or a retry publish"
                            + " that fails, in that window loses the message, which is never run again. Return void or a"
                            + " value (wait for the work inside the method), or accept the window with"
                            + " sumi.kafka.allow-async-listeners=true (retry topics are still required). See docs/consumer-semantics.md, \"Asynchronous handlers\"");
        }
        if (retryTopic) {
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
        return Boolean.TRUE.equals(SumiErrorHandlerConfigurer.runsIdempotentHandler(container));
    }

    /**
     * The adapter's {@code @IdempotentHandler} method; for a class-level {@code @KafkaListener}
     * (or an unknown Spring Kafka) every {@code @IdempotentHandler} method of its bean.
     */
    private static Set<Method> guardedMethods(MessagingMessageListenerAdapter<?, ?> adapter) {
        Method method = method(adapter);
        if (method != null) {
            return AnnotatedElementUtils.hasAnnotation(method, IdempotentHandler.class) ? Set.of(method) : Set.of();
        }
        Object bean = handler(adapter) instanceof HandlerAdapter handler ? handler.getBean() : null;
        if (bean == null) {
            return Set.of();
        }
        return IdempotentHandlerInterceptorSupport.annotatedMethods(bean);
    }

    private static @Nullable Object handler(MessagingMessageListenerAdapter<?, ?> adapter) {
        if (HANDLER_METHOD == null) {
            return null;
        }
        ReflectionUtils.makeAccessible(HANDLER_METHOD);
        return ReflectionUtils.getField(HANDLER_METHOD, adapter);
    }

    /** The listener method, or {@code null} (a class-level {@code @KafkaListener}, an unknown Spring Kafka). */
    private static @Nullable Method method(MessagingMessageListenerAdapter<?, ?> adapter) {
        if (INVOKER_HANDLER_METHOD == null || !(handler(adapter) instanceof HandlerAdapter handler)) {
            return null;
        }
        ReflectionUtils.makeAccessible(INVOKER_HANDLER_METHOD);
        return ReflectionUtils.getField(INVOKER_HANDLER_METHOD, handler) instanceof InvocableHandlerMethod invocable
                ? invocable.getMethod()
                : null;
    }
}
