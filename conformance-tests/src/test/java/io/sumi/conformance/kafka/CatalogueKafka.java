package io.sumi.conformance.kafka;

import io.sumi.conformance.Role;
import java.util.ArrayList;
import java.util.List;
import org.springframework.kafka.test.EmbeddedKafkaKraftBroker;

/**
 * The module's one in-process Kafka broker (KRaft), started on first use and shared by every Kafka
 * context, with every catalogue topic (two partitions each, so that two consumers of one listener
 * each own one) and its {@code -dlt}.
 */
final class CatalogueKafka {

    static final String[] SHAPES = {"record", "batch"};

    private static EmbeddedKafkaKraftBroker broker;

    private CatalogueKafka() {}

    static synchronized String bootstrapServers() {
        if (broker == null) {
            List<String> topics = new ArrayList<>();
            for (String shape : SHAPES) {
                for (Role role : Role.values()) {
                    topics.add(topic(shape, role));
                    topics.add(topic(shape, role) + "-dlt");
                }
            }
            EmbeddedKafkaKraftBroker started = new EmbeddedKafkaKraftBroker(1, 2, topics.toArray(String[]::new));
            started.afterPropertiesSet();
            Runtime.getRuntime().addShutdownHook(new Thread(started::destroy, "catalogue-kafka-stop"));
            broker = started;
        }
        return broker.getBrokersAsString();
    }

    static String topic(String shape, Role role) {
        return "cat." + shape + "." + role.slug();
    }
}
