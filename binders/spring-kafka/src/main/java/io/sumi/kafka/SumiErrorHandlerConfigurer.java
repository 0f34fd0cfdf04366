package io.sumi.kafka;

import io.sumi.consumer.IdempotentHandler;
import io.sumi.consumer.binder.IdempotentHandlerInterceptorSupport;
import io.sumi.kafka.internal.ListenerDelegates;
import java.lang.reflect.Field;
import java.time.Duration;
import java.util.Objects;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;
import org.springframework.kafka.listener.AbstractMessageListenerContainer;
import org.springframework.kafka.listener.ListenerContainerRegistry;
import org.springframework.kafka.listener.MessageListenerContainer;
import org.springframework.kafka.listener.adapter.HandlerAdapter;
import org.springframework.kafka.listener.adapter.MessagingMessageListenerAdapter;
import org.springframework.util.ReflectionUtils;

/**
 * Gives every listener container in a {@link ListenerContainerRegistry} Sumi's exception
 * classification before the containers start ({@link SumiKafkaErrorHandling#configure(AbstractMessageListenerContainer, Duration)}),
 * whatever error handler the container has: a bean, one set on its factory or by a container
 * customizer, or none. Without it, a container with Spring Kafka's default error handler retries a
 * busy key 10 times at once and then skips it.
 *
 * <p>A container whose error handler Sumi cannot teach fails start-up if it runs an
 * {@link IdempotentHandler} (or Sumi cannot tell); other containers keep it. So does a container
 * whose {@link IdempotentHandler} record listener returns a {@code CompletableFuture} or
 * {@code Mono} (unless {@code allowAsyncListeners}, and then only if it is not a retry-topic
 * container), or whose {@link IdempotentHandler} batch listener returns one
 * ({@link AsyncListenerCheck}: Spring Kafka commits a failed future's offset before its retry is
 * published, and without retry topics never retries it; Sumi would refuse every batch). Runs before the
 * {@link BudgetListenerPauser}, which then wraps the taught handler. Containers created after
 * start-up are not seen: call {@link SumiKafkaErrorHandling#configure(AbstractMessageListenerContainer, Duration)}.
 */
public final class SumiErrorHandlerConfigurer implements SmartLifecycle {

    private static final Logger log = LoggerFactory.getLogger(SumiErrorHandlerConfigurer.class);

    private static final @Nullable Field HANDLER_METHOD =
            ReflectionUtils.findField(MessagingMessageListenerAdapter.class, "handlerMethod");

    private final Supplier<? extends ListenerContainerRegistry> containers;
    private final Duration busyInterval;
    private final boolean allowAsyncListeners;
    private volatile boolean running;

    /**
     * @param containers the registry, looked up at start: a bean that takes the registry itself as a
     *     dependency is started after it by Spring's lifecycle processor (dependencies first,
     *     whatever the phase), when the containers have already copied their error handlers
     */
    public SumiErrorHandlerConfigurer(Supplier<? extends ListenerContainerRegistry> containers, Duration busyInterval) {
        this(containers, busyInterval, false);
    }

    /**
     * @param containers as in {@link #SumiErrorHandlerConfigurer(Supplier, Duration)}
     * @param allowAsyncListeners whether asynchronous {@link IdempotentHandler} record listeners on
     *     retry-topic containers may start, accepting that Spring Kafka commits a failed future's
     *     offset before its retry is published (a crash in between loses the message); refused if
     *     {@code false}
     */
    public SumiErrorHandlerConfigurer(
            Supplier<? extends ListenerContainerRegistry> containers,
            Duration busyInterval,
            boolean allowAsyncListeners) {
        this.containers = Objects.requireNonNull(containers, "containers");
        this.busyInterval = Objects.requireNonNull(busyInterval, "busyInterval");
        this.allowAsyncListeners = allowAsyncListeners;
    }

    @Override
    public void start() {
        for (MessageListenerContainer container : containers.get().getAllListenerContainers()) {
            // Share-group containers have no error handler of Sumi's (the share module settles their
            // records), so a running one is no concern of this configurer.
            if (container instanceof AbstractMessageListenerContainer<?, ?> listenerContainer) {
                if (container.isRunning()) {
                    log.warn(
                            "Kafka listener container '{}' was started before Sumi configured its error handler; a busy"
                                    + " key it meets before its next restart may be skipped",
                            container.getListenerId());
                }
                // A failed future's offset is committed before its retry is published, the retry needs
                // retry topics, and a batch's future is never awaited.
                AsyncListenerCheck.check(listenerContainer, allowAsyncListeners);
                try {
                    SumiKafkaErrorHandling.configure(listenerContainer, busyInterval);
                } catch (IllegalStateException ex) {
                    if (!Boolean.FALSE.equals(runsIdempotentHandler(listenerContainer))) {
                        throw ex;
                    }
                    log.debug(
                            "Container '{}' runs no @IdempotentHandler; its error handler is left as it is: {}",
                            container.getListenerId(),
                            ex.getMessage());
                }
            }
        }
        running = true;
    }

    /** Whether the container's listener bean has an {@link IdempotentHandler} method; {@code null} if Sumi cannot tell. */
    static @Nullable Boolean runsIdempotentHandler(AbstractMessageListenerContainer<?, ?> container) {
        return runsIdempotentHandler(container.getContainerProperties().getMessageListener());
    }

    /** Whether {@code listener} (a container's message listener) calls an {@link IdempotentHandler} method's bean; {@code null} if Sumi cannot tell. */
    static @Nullable Boolean runsIdempotentHandler(@Nullable Object listener) {
        Object bean = listenerBean(listener);
        if (bean == null) {
            return null;
        }
        return !IdempotentHandlerInterceptorSupport.annotatedMethods(bean).isEmpty();
    }

    /** The bean {@code listener} (a container's message listener) calls, or {@code null} if Sumi cannot see it. */
    static @Nullable Object listenerBean(@Nullable Object listener) {
        if (ListenerDelegates.innermost(listener) instanceof MessagingMessageListenerAdapter<?, ?> adapter) {
            if (HANDLER_METHOD == null) {
                return null;
            }
            ReflectionUtils.makeAccessible(HANDLER_METHOD);
            return ReflectionUtils.getField(HANDLER_METHOD, adapter) instanceof HandlerAdapter handler
                    ? handler.getBean()
                    : null;
        }
        return listener;
    }

    @Override
    public void stop() {
        running = false;
    }

    @Override
    public boolean isRunning() {
        return running;
    }

    /** Before the {@link BudgetListenerPauser} and the listener containers. */
    @Override
    public int getPhase() {
        return AbstractMessageListenerContainer.DEFAULT_PHASE - 2;
    }
}
