package io.sumi.kafka.share;

import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import java.util.Objects;
import java.util.function.Supplier;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.jspecify.annotations.Nullable;
import org.springframework.kafka.listener.ContainerProperties;
import org.springframework.kafka.support.micrometer.KafkaListenerObservation;
import org.springframework.kafka.support.micrometer.KafkaListenerObservation.DefaultKafkaListenerObservationConvention;
import org.springframework.kafka.support.micrometer.KafkaListenerObservationConvention;
import org.springframework.kafka.support.micrometer.KafkaRecordReceiverContext;

/**
 * Spring Kafka's listener observation ({@code spring.kafka.listener}) around each record of a
 * guarded share-group container. Spring Kafka 4.1's share container opens none, so without this a
 * share record's {@code traceparent} would be read by nobody and Sumi's {@code sumi.message.handling}
 * would start a trace of its own; with it, the consumer span continues the producer's trace and
 * Sumi's span is its child, as on an ordinary container. Opened on the same terms as an ordinary
 * container's: the container properties' own registry if they have one, else the application's
 * when {@code observationEnabled} is set; the properties' convention, if any.
 */
final class ShareRecordObservation {

    /** Observes nothing. */
    static final ShareRecordObservation NONE =
            new ShareRecordObservation(ObservationRegistry.NOOP, null, "", null, () -> null);

    private final ObservationRegistry registry;
    private final @Nullable KafkaListenerObservationConvention convention;
    private final String listenerId;
    private final @Nullable String groupId;
    private final Supplier<@Nullable String> clusterId;

    private ShareRecordObservation(
            ObservationRegistry registry,
            @Nullable KafkaListenerObservationConvention convention,
            String listenerId,
            @Nullable String groupId,
            Supplier<@Nullable String> clusterId) {
        this.registry = registry;
        this.convention = convention;
        this.listenerId = listenerId;
        this.groupId = groupId;
        this.clusterId = clusterId;
    }

    /**
     * The observation of a container with {@code properties}.
     *
     * @param applicationRegistry the application's registry, used when the properties have none
     *     and enable observation; {@code null}: there is none
     * @param clusterId the Kafka cluster's id, as the context names the remote service (read once
     *     per record: must be cheap, {@code KafkaAdmin#clusterId()} caches it)
     */
    static ShareRecordObservation of(
            ContainerProperties properties,
            @Nullable ObservationRegistry applicationRegistry,
            String listenerId,
            @Nullable String groupId,
            Supplier<@Nullable String> clusterId) {
        ObservationRegistry registry = properties.getObservationRegistry();
        if (registry.isNoop() && properties.isObservationEnabled() && applicationRegistry != null) {
            registry = applicationRegistry;
        }
        if (registry.isNoop()) {
            return NONE;
        }
        return new ShareRecordObservation(
                registry,
                properties.getObservationConvention(),
                listenerId,
                groupId,
                Objects.requireNonNull(clusterId, "clusterId"));
    }

    /** Started, not yet in scope: the caller opens its scope, marks an error and stops it. */
    @SuppressWarnings("NullAway") // KafkaRecordReceiverContext takes a null cluster id; its signature does not say so
    Observation start(ConsumerRecord<?, ?> record) {
        return KafkaListenerObservation.LISTENER_OBSERVATION
                .observation(
                        convention,
                        DefaultKafkaListenerObservationConvention.INSTANCE,
                        () -> new KafkaRecordReceiverContext(record, listenerId, null, groupId, clusterId),
                        registry)
                .start();
    }
}
