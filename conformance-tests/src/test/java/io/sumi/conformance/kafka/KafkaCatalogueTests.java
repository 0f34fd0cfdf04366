package io.sumi.conformance.kafka;

import static org.awaitility.Awaitility.await;

import io.sumi.conformance.CatalogueDriver;
import io.sumi.conformance.KafkaGroups;
import io.sumi.conformance.ListenerKind;
import io.sumi.conformance.Outgoing;
import io.sumi.conformance.Role;
import io.sumi.testing.TestDatabase;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.core.KafkaAdmin;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.listener.ConcurrentMessageListenerContainer;
import org.springframework.kafka.listener.MessageListenerContainer;
import org.springframework.kafka.test.utils.ContainerTestUtils;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The Kafka kinds' driver: one context ({@link KafkaCatalogueApp}) for the record and batch kinds,
 * another with {@code sumi.kafka.poll-claim=true}; the module's one broker ({@link CatalogueKafka}).
 */
@SpringBootTest(
        classes = KafkaCatalogueApp.class,
        properties = {
            "spring.main.banner-mode=off",
            "spring.flyway.locations=classpath:db/sumi/{vendor}",
            "spring.kafka.consumer.auto-offset-reset=earliest",
            "spring.kafka.consumer.properties.metadata.max.age.ms=1000",
            "spring.kafka.consumer.properties.session.timeout.ms=6000",
            "spring.kafka.consumer.properties.heartbeat.interval.ms=1000",
            // A retry seeks back and waits for the fetch in flight (500 ms by default each time).
            "spring.kafka.consumer.fetch-max-wait=50ms",
            // A nack pauses the consumer, which resumes after a poll that waits the whole poll
            // timeout while paused (5 s by default each time).
            "spring.kafka.listener.poll-timeout=500ms",
            // The async listeners' opt-in (refused without it): the catalogue's ASYNC_FAILED_FUTURE
            // cell tests that opted-in path, retry topics and all (KafkaRecordListeners.async).
            "sumi.kafka.allow-async-listeners=true"
        })
abstract class KafkaCatalogueTests extends CatalogueDriver {

    static final String NO_REJECT =
            "Kafka's Acknowledgment has no reject: nack (the row above) is its only negative" + " acknowledgement";
    static final String NO_MULTIPLE = "Kafka acknowledges offsets, and an offset covers every record before it by"
            + " design: there is no per-delivery settlement Sumi could widen to the application's other records";

    @DynamicPropertySource
    static void services(DynamicPropertyRegistry registry) {
        TestDatabase.POSTGRESQL.registerDataSource(registry::add);
        registry.add("spring.kafka.bootstrap-servers", CatalogueKafka::bootstrapServers);
    }

    @Autowired
    KafkaTemplate<String, String> template;

    @Autowired
    KafkaListenerEndpointRegistry registry;

    @Autowired
    KafkaAdmin kafkaAdmin;

    /** {@code record} or {@code batch}: which listeners this kind drives. */
    abstract String shape();

    @Override
    protected ListenerKind kind() {
        // Every listener owns both partitions of its topic before a scenario sends (a record sent to
        // partition 1 must reach the second consumer, not wait for a rebalance).
        for (MessageListenerContainer container : registry.getListenerContainers()) {
            if (container.getContainerProperties().getTopics() != null) {
                waitForEveryConsumersPartitions(container);
            }
        }
        return this;
    }

    @Override
    public boolean batch() {
        return "batch".equals(shape());
    }

    @Override
    public void send(Role role, List<Outgoing> messages) throws Exception {
        String topic = CatalogueKafka.topic(shape(), role);
        MessageListenerContainer container = registry.getListenerContainer(listenerId(role));
        boolean hold = batch() && messages.size() > 1 && container != null;
        if (hold) {
            // One batch: the records are all in the partition before the consumer polls again.
            container.pause();
            await().atMost(Duration.ofSeconds(30)).until(container::isPauseRequested);
            await().atMost(Duration.ofSeconds(30)).until(container::isContainerPaused);
        }
        for (Outgoing message : messages) {
            ProducerRecord<String, String> record =
                    new ProducerRecord<>(topic, message.lane() % 2, null, message.payload());
            if (message.key() != null) {
                record.headers().add("idempotency-key", message.key().getBytes(StandardCharsets.UTF_8));
            }
            template.send(record).get(30, TimeUnit.SECONDS);
        }
        if (hold) {
            container.resume();
        }
    }

    @Override
    public void start(Role role) {
        MessageListenerContainer container = container(role);
        container.start();
        waitForEveryConsumersPartitions(container);
    }

    String listenerId(Role role) {
        return "kafka-" + shape() + "-" + role.slug();
    }

    @Override
    public String consumer(Role role) {
        return listenerId(role);
    }

    /**
     * Waits until the topic's two partitions are assigned and, with two consumers, one to each:
     * {@link ContainerTestUtils#waitForAssignment} counts the partitions over all consumers, so it
     * is satisfied while the first consumer to join holds both, and the rebalance that gives the
     * second its partition could then wait behind a handler a scenario holds.
     */
    private static void waitForEveryConsumersPartitions(MessageListenerContainer container) {
        ContainerTestUtils.waitForAssignment(container, 2);
        if (container instanceof ConcurrentMessageListenerContainer<?, ?> concurrent) {
            await().atMost(Duration.ofSeconds(60))
                    .until(() -> concurrent.getContainers().stream()
                            .allMatch(child -> child.getAssignedPartitions() != null
                                    && child.getAssignedPartitions().size()
                                            == 2 / concurrent.getContainers().size()));
        }
    }

    /** The members of the listener's consumer group (its id): a stopped container's consumer has left it. */
    @Override
    public @Nullable String stillConsuming(Role role) throws Exception {
        return KafkaGroups.members(kafkaAdmin.getConfigurationProperties(), listenerId(role));
    }

    /** The stop's callback runs once the consumer thread stopped (after its handler returned). */
    @Override
    protected MessageListenerContainer container(Role role) {
        return found(registry.getListenerContainer(listenerId(role)), listenerId(role));
    }
}
