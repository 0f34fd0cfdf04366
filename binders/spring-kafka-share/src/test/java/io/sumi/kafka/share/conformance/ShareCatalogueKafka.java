package io.sumi.kafka.share.conformance;

import io.sumi.conformance.Role;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.springframework.kafka.test.EmbeddedKafkaKraftBroker;

/**
 * The catalogue's in-process Kafka broker (KRaft, Kafka 4.2) with share groups on, started on first
 * use, with every role's topic and its {@code -dlt}. One partition each: a share group hands one
 * partition to all its members (it hands each member its own only when there are enough), so two
 * copies of a key reach two consumers at once. The delivery limit is the broker's default, 5, set
 * here so that {@link DeadLetterTopicRecoverer} counts against the same figure; the lock stays at
 * its default of 30 s. A broker of its own, not the one of {@code ShareGroupIdempotentHandlerIntegrationTests},
 * whose 2 s locks and limit of 2 (broker settings, not a group's in Kafka 4.2) would archive the
 * catalogue's third deliveries.
 */
final class ShareCatalogueKafka {

    /** {@code group.share.delivery.count.limit}. */
    static final int DELIVERY_LIMIT = 5;

    private static EmbeddedKafkaKraftBroker broker;

    private ShareCatalogueKafka() {}

    static synchronized String bootstrapServers() {
        if (broker == null) {
            List<String> topics = new ArrayList<>();
            for (Role role : Role.values()) {
                topics.add(topic(role));
                topics.add(topic(role) + "-dlt");
            }
            EmbeddedKafkaKraftBroker started = new EmbeddedKafkaKraftBroker(1, 1, topics.toArray(String[]::new));
            started.brokerProperties(Map.of(
                    "share.coordinator.state.topic.replication.factor", "1",
                    "share.coordinator.state.topic.min.isr", "1",
                    "group.share.delivery.count.limit", Integer.toString(DELIVERY_LIMIT)));
            started.afterPropertiesSet();
            Runtime.getRuntime().addShutdownHook(new Thread(started::destroy, "share-catalogue-kafka-stop"));
            broker = started;
        }
        return broker.getBrokersAsString();
    }

    static String topic(Role role) {
        return "cat.share." + role.slug();
    }

    /** The listener's id, share group and ledger consumer of {@code role}. */
    static String listenerId(Role role) {
        return "kafka-share-" + role.slug();
    }
}
