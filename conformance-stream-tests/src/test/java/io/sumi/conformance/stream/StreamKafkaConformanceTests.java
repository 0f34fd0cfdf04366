package io.sumi.conformance.stream;

import static org.awaitility.Awaitility.await;

import io.sumi.conformance.KafkaGroups;
import io.sumi.conformance.Outgoing;
import io.sumi.conformance.Role;
import io.sumi.conformance.Scenario;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.serialization.StringSerializer;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Order;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.kafka.core.DefaultKafkaProducerFactory;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.test.EmbeddedKafkaKraftBroker;
import org.springframework.kafka.test.utils.ContainerTestUtils;
import org.springframework.test.context.ActiveProfiles;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The catalogue on Spring Cloud Stream functions with the Kafka binder: record bindings, the
 * binder's retry (3 attempts) and DLQ, Sumi's container customizer (the starter's defaults). The
 * bindings are in {@code application-stream-kafka.properties}; the broker is in-process, with every
 * topic created up front (two partitions: two consumers of one binding each own one).
 */
@Order(30)
@SpringBootTest(classes = StreamCatalogueApp.class)
@ActiveProfiles("stream-kafka")
class StreamKafkaConformanceTests extends StreamCatalogueTests {

    static final String DLQ = "cat.stream.dlq";

    private static EmbeddedKafkaKraftBroker broker;

    private static KafkaTemplate<String, String> template;

    static synchronized String brokers() {
        if (broker == null) {
            List<String> topics = new ArrayList<>();
            for (Role role : BOUND) {
                topics.add(topic(role));
            }
            topics.add(DLQ);
            EmbeddedKafkaKraftBroker started = new EmbeddedKafkaKraftBroker(1, 2, topics.toArray(String[]::new));
            started.afterPropertiesSet();
            broker = started;
            Map<String, Object> producer = new HashMap<>();
            producer.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, started.getBrokersAsString());
            // Explicit serializers: the Kafka binder makes ByteArray the spring.kafka default.
            template = new KafkaTemplate<>(
                    new DefaultKafkaProducerFactory<>(producer, new StringSerializer(), new StringSerializer()));
        }
        return broker.getBrokersAsString();
    }

    @AfterAll
    static void stopBroker() {
        // The context stays cached until the JVM ends; its consumers just lose the broker then.
        if (template != null) {
            template.destroy();
        }
    }

    @DynamicPropertySource
    static void kafka(DynamicPropertyRegistry registry) {
        registry.add("catalogue.kafka", StreamKafkaConformanceTests::brokers);
    }

    static String topic(Role role) {
        return "cat.stream." + role.slug();
    }

    private volatile boolean assigned;

    @Override
    public String id() {
        return "stream-kafka";
    }

    @Override
    public Map<Scenario, String> notApplicable() {
        Map<Scenario, String> reasons = new HashMap<>(notApplicableToStream());
        reasons.put(
                Scenario.BAD_KEY_TRANSACTED_CONTAINER,
                "a Kafka binder container has no broker transaction that could undo a settlement (Kafka"
                        + " transactions are covered by the starter's KafkaTransactionsIntegrationTests)");
        reasons.put(
                Scenario.MANUAL_REJECT,
                "Kafka's Acknowledgment has no reject: nack (the row above) is its only negative acknowledgement");
        reasons.put(
                Scenario.MANUAL_MULTIPLE,
                "Kafka acknowledges offsets, and an offset covers every record before it by design: there is no"
                        + " per-delivery settlement Sumi could widen to the application's other records");
        return reasons;
    }

    @Override
    protected io.sumi.conformance.ListenerKind kind() {
        if (!assigned) {
            awaitAssignments();
            assigned = true;
        }
        return this;
    }

    /**
     * Every binding's group owns both partitions of its topic before a scenario sends: a record for
     * lane 1 must reach the second consumer at once, not wait for a rebalance.
     */
    private static void awaitAssignments() {
        List<String> groups = new ArrayList<>();
        for (Role role : BOUND) {
            groups.add(role.slug());
        }
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, brokers()))) {
            await("every binding's consumers assigned")
                    .atMost(Duration.ofSeconds(60))
                    .pollInterval(Duration.ofMillis(200))
                    .until(() -> {
                        Map<String, ConsumerGroupDescription> described =
                                admin.describeConsumerGroups(groups).all().get(10, TimeUnit.SECONDS);
                        return described.values().stream()
                                .allMatch(group -> group.groupState() == GroupState.STABLE
                                        && group.members().stream()
                                                        .mapToInt(m -> m.assignment()
                                                                .topicPartitions()
                                                                .size())
                                                        .sum()
                                                == 2);
                    });
        }
    }

    @Override
    public void start(Role role) {
        super.start(role);
        ContainerTestUtils.waitForAssignment(container(role), 2);
    }

    /** The members of the binding's consumer group (the role's slug): a stopped container's consumer has left it. */
    @Override
    public @Nullable String stillConsuming(Role role) throws Exception {
        return KafkaGroups.members(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, brokers()), role.slug());
    }

    @Override
    public void send(Role role, List<Outgoing> messages) throws Exception {
        for (Outgoing message : messages) {
            ProducerRecord<String, String> record =
                    new ProducerRecord<>(topic(role), message.lane() % 2, null, message.payload());
            if (message.key() != null) {
                record.headers().add("idempotency-key", message.key().getBytes(StandardCharsets.UTF_8));
            }
            template.send(record).get(30, TimeUnit.SECONDS);
        }
    }
}
