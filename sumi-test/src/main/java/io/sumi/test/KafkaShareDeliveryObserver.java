package io.sumi.test;

import io.sumi.test.internal.RecordKeys;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.Objects;
import java.util.function.Supplier;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.jspecify.annotations.Nullable;
import org.springframework.context.SmartLifecycle;
import org.springframework.kafka.listener.ContainerProperties;
import org.springframework.kafka.listener.ListenerContainerRegistry;
import org.springframework.kafka.listener.MessageListenerContainer;
import org.springframework.util.ClassUtils;

/**
 * Watches the share-group containers (KIP-932, Spring Kafka 4.1), which take no record interceptor,
 * as {@link KafkaDeliveryObserver} watches the others: before the containers start, and after
 * Sumi's share configurer has wrapped a guarded container's listener, each share container's
 * listener is wrapped so that every record opens a {@link DeliveryFrame} and ends it by how the
 * record was settled. A delivery counts as acknowledged when it is accepted or rejected (the share
 * group will not deliver it again); a release, a renewal (Sumi holding a busy key) or no
 * acknowledgement in the call counts as not acknowledged. Without an acknowledgement argument
 * ({@code ShareAckMode.EXPLICIT}), a return is an acceptance and an exception is not. Never changes
 * a record or an acknowledgement.
 *
 * <p>The kit is compiled against Spring Kafka 4.0, which has no share-group types: they are found
 * by name and the listener and its acknowledgement are wrapped in proxies of their own interfaces.
 */
final class KafkaShareDeliveryObserver implements SmartLifecycle {

    private static final String SHARE_CONTAINER =
            "org.springframework.kafka.listener.ShareKafkaMessageListenerContainer";

    private final Supplier<? extends ListenerContainerRegistry> containers;
    private final Supplier<DeliveryLog> log;
    private volatile boolean running;

    KafkaShareDeliveryObserver(Supplier<? extends ListenerContainerRegistry> containers, Supplier<DeliveryLog> log) {
        this.containers = containers;
        this.log = log;
    }

    @Override
    public void start() {
        ClassLoader loader = getClass().getClassLoader();
        if (ClassUtils.isPresent(SHARE_CONTAINER, loader)) {
            Class<?> shareContainer = ClassUtils.resolveClassName(SHARE_CONTAINER, loader);
            for (MessageListenerContainer container : containers.get().getAllListenerContainers()) {
                if (shareContainer.isInstance(container) && !container.isRunning()) {
                    watch(container);
                }
            }
        }
        running = true;
    }

    private void watch(MessageListenerContainer container) {
        ContainerProperties properties = container.getContainerProperties();
        Object listener = properties.getMessageListener();
        if (listener == null
                || (Proxy.isProxyClass(listener.getClass())
                        && Proxy.getInvocationHandler(listener) instanceof WatchedListener)) {
            return;
        }
        String group = Objects.requireNonNullElse(container.getGroupId(), "<no group>");
        properties.setMessageListener(proxy(listener, new WatchedListener(listener, group, log)));
    }

    private static Object proxy(Object target, InvocationHandler handler) {
        Class<?>[] interfaces = ClassUtils.getAllInterfacesForClass(
                target.getClass(), target.getClass().getClassLoader());
        return Proxy.newProxyInstance(target.getClass().getClassLoader(), interfaces, handler);
    }

    private static @Nullable Object invoke(Object target, Method method, Object @Nullable [] args) throws Throwable {
        try {
            return method.invoke(target, args);
        } catch (InvocationTargetException ex) {
            throw ex.getTargetException();
        }
    }

    /** The container's listener: {@code onShareRecord(record, acknowledgment, consumer)} or {@code onMessage(record)}. */
    private static final class WatchedListener implements InvocationHandler {

        private final Object listener;
        private final String group;
        private final Supplier<DeliveryLog> log;

        WatchedListener(Object listener, String group, Supplier<DeliveryLog> log) {
            this.listener = listener;
            this.group = group;
            this.log = log;
        }

        @Override
        public @Nullable Object invoke(Object proxy, Method method, Object @Nullable [] args) throws Throwable {
            if (method.getName().equals("getDelegate") && (args == null || args.length == 0)) {
                // The watcher delegates to the listener it wraps, so a walk down the chain of
                // delegates (Sumi's, to see that it guards the container already) meets that one.
                return listener;
            }
            boolean delivery =
                    method.getName().equals("onShareRecord") || method.getName().equals("onMessage");
            if (!delivery || args == null || args.length == 0 || !(args[0] instanceof ConsumerRecord<?, ?> record)) {
                return KafkaShareDeliveryObserver.invoke(listener, method, args);
            }
            WatchedAcknowledgment acknowledgment = null;
            Object given = args.length == 3 ? args[1] : null;
            if (method.getName().equals("onShareRecord") && given != null) {
                acknowledgment = new WatchedAcknowledgment(given);
                args[1] = proxy(given, acknowledgment);
            }
            DeliveryFrame frame = DeliveryFrame.open(group, RecordKeys.keyOf(record), record.topic());
            try {
                Object result = KafkaShareDeliveryObserver.invoke(listener, method, args);
                frame.finish(log.get(), acknowledgment == null || acknowledgment.settled);
                return result;
            } catch (Throwable failure) {
                frame.finish(log.get(), false);
                throw failure;
            } finally {
                DeliveryFrame.close();
            }
        }
    }

    /** The record's {@code ShareAcknowledgment}: remembers whether it was accepted or rejected. */
    private static final class WatchedAcknowledgment implements InvocationHandler {

        private final Object acknowledgment;
        private volatile boolean settled;

        WatchedAcknowledgment(Object acknowledgment) {
            this.acknowledgment = acknowledgment;
        }

        @Override
        public @Nullable Object invoke(Object proxy, Method method, Object @Nullable [] args) throws Throwable {
            Object result = KafkaShareDeliveryObserver.invoke(acknowledgment, method, args);
            if (method.getName().equals("acknowledge") || method.getName().equals("reject")) {
                settled = true;
            }
            return result;
        }
    }

    @Override
    public void stop() {
        running = false;
    }

    @Override
    public boolean isRunning() {
        return running;
    }

    /** Just after Sumi's share configurer ({@code Integer.MIN_VALUE}), long before the containers start. */
    @Override
    public int getPhase() {
        return Integer.MIN_VALUE + 1;
    }
}
