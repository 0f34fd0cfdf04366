package io.sumi.kafka.share.conformance;

import io.sumi.conformance.Role;
import io.sumi.kafka.share.ShareTestBroker;
import java.util.ArrayList;
import java.util.List;
import org.springframework.kafka.test.EmbeddedKafkaKraftBroker;

/**
 * The catalogue's topics on the module's share broker ({@link ShareTestBroker}): every role's topic
 * and its {@code -dlt}, added on first use. One partition each: a share group hands one partition
 * to all its members (it hands each member its own only when there are enough), so two copies of a
 * key reach two consumers at once.
 */
final class ShareCatalogueKafka {

    /** {@code group.share.delivery.count.limit}. */
    static final int DELIVERY_LIMIT = ShareTestBroker.DELIVERY_LIMIT;

    private static boolean topicsAdded;

    private ShareCatalogueKafka() {}

    static synchronized String bootstrapServers() {
        EmbeddedKafkaKraftBroker broker = ShareTestBroker.broker();
        if (!topicsAdded) {
            List<String> topics = new ArrayList<>();
            for (Role role : Role.values()) {
                topics.add(topic(role));
                topics.add(topic(role) + "-dlt");
            }
            broker.addTopics(topics.toArray(String[]::new));
            topicsAdded = true;
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
