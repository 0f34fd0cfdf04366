package io.sumi.kafka.share;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.observation.ObservationRegistry;
import io.sumi.consumer.IdempotentHandler;
import io.sumi.consumer.ListenerReturnTypes;
import io.sumi.consumer.binder.BusyPolicy;
import io.sumi.consumer.binder.IdempotentHandlerInterceptorSupport;
import io.sumi.kafka.ShareGroupListenerCheck;
import io.sumi.kafka.internal.ListenerDelegates;
import java.lang.reflect.Method;
import java.util.Objects;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.kafka.listener.AbstractShareKafkaMessageListenerContainer;
import org.springframework.kafka.listener.ContainerProperties;
import org.springframework.kafka.listener.GenericMessageListener;
import org.springframework.kafka.listener.ListenerContainerRegistry;
import org.springframework.kafka.listener.MessageListenerContainer;
import org.springframework.kafka.listener.ShareConsumerRecordRecoverer;
import org.springframework.kafka.listener.ShareKafkaMessageListenerContainer;
import org.springframework.util.ReflectionUtils;

/**
 * Puts Sumi in front of every share-group container (KIP-932, {@code ShareKafkaListenerContainerFactory})
 * whose listener bean has an {@code @IdempotentHandler} method, before the containers start: its
 * listener is wrapped in {@link SumiShareListener} and the container switched to
 * {@code ShareAckMode.MANUAL}, so that Sumi, not the container, sends each record's
 * acknowledgement ({@code EXPLICIT} would send {@code ACCEPT} after every return, overwriting a
 * {@code RENEW}). Share-group containers without such a listener are left alone.
 *
 * <p>Refused at start-up, with what to do instead: {@code ShareAckMode.IMPLICIT} (the client accepts
 * every record whatever the handler did, so a failed handler's record would be lost), a method that
 * keeps replies ({@code storeReply}) or returns a future (Spring Kafka drops a share listener's
 * return value), a listener Sumi cannot see into, a container started before this ran.
 *
 * @since 0.1.0
 */
public final class ShareListenerConfigurer implements SmartLifecycle {

    private static final Logger log = LoggerFactory.getLogger(ShareListenerConfigurer.class);

    private static final @Nullable Method RECOVERER_GETTER = ReflectionUtils.findMethod(
            AbstractShareKafkaMessageListenerContainer.class, "getShareConsumerRecordRecoverer");

    private final Supplier<? extends ListenerContainerRegistry> containers;
    private final BusyPolicy busyPolicy;
    private final ShareMetrics metrics;
    private final Supplier<@Nullable ObservationRegistry> observationRegistry;
    private final Supplier<@Nullable String> clusterId;
    private volatile boolean running;

    /**
     * @param containers the application's listener containers (looked up at start)
     * @param busyPolicy when a held record is claimed again and how long a row awaiting
     *     reconciliation is held (renewed) before it is released; a busy key is held while its
     *     holder lives, whatever the policy's max wait
     * @param meterRegistry where the share listeners' counters go; {@code null}: nowhere
     * @param observationRegistry the application's, for the containers whose properties enable
     *     observation without a registry of their own (looked up at start); {@code null}: none
     * @param clusterId the Kafka cluster's id for the listener observation (read per record, so
     *     cached, as {@code KafkaAdmin#clusterId()} does); {@code null}: unknown
     */
    public ShareListenerConfigurer(
            Supplier<? extends ListenerContainerRegistry> containers,
            BusyPolicy busyPolicy,
            @Nullable MeterRegistry meterRegistry,
            Supplier<@Nullable ObservationRegistry> observationRegistry,
            Supplier<@Nullable String> clusterId) {
        this.containers = Objects.requireNonNull(containers, "containers");
        this.observationRegistry = Objects.requireNonNull(observationRegistry, "observationRegistry");
        this.clusterId = Objects.requireNonNull(clusterId, "clusterId");
        // A busy key is held while its holder lives: each release past a bound would count one of
        // the few deliveries a share group allows, and it could archive the record of a holder that
        // still fails (BusyPolicy#holdingBusyKeysWhileTheirHolderLives).
        this.busyPolicy = Objects.requireNonNull(busyPolicy, "busyPolicy").holdingBusyKeysWhileTheirHolderLives();
        this.metrics = new ShareMetrics(meterRegistry);
    }

    @Override
    public void start() {
        for (MessageListenerContainer container : containers.get().getAllListenerContainers()) {
            if (container instanceof ShareKafkaMessageListenerContainer<?, ?> share) {
                configure(share);
            }
        }
        running = true;
    }

    /**
     * Wraps {@code container}'s listener if it runs an {@code @IdempotentHandler}; a no-op if it
     * does not, or is wrapped already.
     *
     * @throws IllegalStateException if Sumi cannot guard the container, naming it and what to do
     */
    void configure(ShareKafkaMessageListenerContainer<?, ?> container) {
        ContainerProperties properties = container.getContainerProperties();
        Object listener = properties.getMessageListener();
        if (guardedAlready(listener)) {
            return;
        }
        String id = container.getListenerId() != null ? container.getListenerId() : container.getBeanName();
        Boolean guarded = ShareGroupListenerCheck.runsIdempotentHandler(listener);
        if (Boolean.FALSE.equals(guarded)) {
            return;
        }
        if (guarded == null || !(listener instanceof GenericMessageListener<?> generic)) {
            throw refused(id, "Sumi cannot see which bean its listener calls; use a @KafkaListener method");
        }
        if (container.isRunning()) {
            throw refused(id, "it was started before Sumi configured it; leave its start to the application context");
        }
        if (properties.getShareAckMode() == ContainerProperties.ShareAckMode.IMPLICIT) {
            throw refused(
                    id,
                    "it runs in ShareAckMode.IMPLICIT, where the client accepts every record whatever the handler did,"
                            + " so a failed handler's record would be lost; use EXPLICIT (the default) or MANUAL");
        }
        Object bean = ShareGroupListenerCheck.listenerBean(listener);
        if (bean != null) {
            for (Method method : IdempotentHandlerInterceptorSupport.annotatedMethods(bean)) {
                checkReturnType(id, method);
            }
        }
        boolean toRecoverer = recoverer(container) != ShareConsumerRecordRecoverer.REJECTING;
        properties.setShareAckMode(ContainerProperties.ShareAckMode.MANUAL);
        ShareRecordObservation observation =
                ShareRecordObservation.of(properties, observationRegistry.get(), id, container.getGroupId(), clusterId);
        properties.setMessageListener(new SumiShareListener<>(
                generic, id, busyPolicy, toRecoverer, container::isRunning, metrics, observation));
        log.info(
                "Share-group container '{}' runs an @IdempotentHandler: Sumi settles its acknowledgements"
                        + " (ShareAckMode.MANUAL; {})",
                id,
                toRecoverer
                        ? "failed handlers' records and keys that cannot run go to the container's recoverer"
                        : "a failed handler's record is released, delivered again; one whose key cannot run is rejected");
    }

    /**
     * Whether Sumi's listener is in {@code listener}'s chain of delegates: this configurer wrapped
     * it at an earlier start (a context stopped and started again), and something that delegates,
     * such as the test kit's watcher, may have wrapped Sumi's listener since.
     */
    private static boolean guardedAlready(@Nullable Object listener) {
        return ListenerDelegates.chain(listener).stream().anyMatch(SumiShareListener.class::isInstance);
    }

    /**
     * The container's recoverer ({@code REJECTING} unless the application set one); read through
     * its protected getter, which Spring Kafka 4.1 does not make public.
     */
    private static @Nullable Object recoverer(ShareKafkaMessageListenerContainer<?, ?> container) {
        if (RECOVERER_GETTER == null) {
            return ShareConsumerRecordRecoverer.REJECTING;
        }
        ReflectionUtils.makeAccessible(RECOVERER_GETTER);
        return ReflectionUtils.invokeMethod(RECOVERER_GETTER, container);
    }

    private static void checkReturnType(String id, Method method) {
        IdempotentHandler annotation = AnnotatedElementUtils.findMergedAnnotation(method, IdempotentHandler.class);
        if (annotation != null && annotation.storeReply()) {
            throw refused(
                    id,
                    method + " keeps replies (storeReply), but Spring Kafka drops a share listener's return value;"
                            + " remove storeReply");
        }
        if (ListenerReturnTypes.of(method).isAsync()) {
            throw refused(
                    id,
                    method + " returns a future, but Spring Kafka drops a share listener's return value, so the record"
                            + " would be settled before the future ends; return void and finish the work in the method");
        }
    }

    private static IllegalStateException refused(String id, String why) {
        return new IllegalStateException("Kafka share-group container '" + id
                + "' runs an @IdempotentHandler listener that Sumi cannot guard: " + why
                + ". See docs/kafka-share-groups.md");
    }

    @Override
    public void stop() {
        running = false;
    }

    @Override
    public boolean isRunning() {
        return running;
    }

    /**
     * First of all: the containers exist once the singletons are instantiated, and a share
     * container's phase is its factory's, 0 unless set (the starter's {@code ShareFactoryPhase} sets the default), so the
     * containers' registry may start them in any phase.
     */
    @Override
    public int getPhase() {
        return Integer.MIN_VALUE;
    }
}
