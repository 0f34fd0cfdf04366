package io.sumi.conformance.kafka;

import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.MeterRegistry;
import io.sumi.conformance.BudgetWindow;
import io.sumi.conformance.ConformanceCatalogue;
import io.sumi.conformance.LedgerFaults;
import io.sumi.conformance.ListenerKind;
import io.sumi.conformance.Outgoing;
import io.sumi.conformance.Role;
import io.sumi.conformance.Work;
import io.sumi.testing.TestDatabase;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
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
            "sumi.budget-pause.check-interval=100ms",
            // The async listeners' opt-in (refused without it): the catalogue's ASYNC_FAILED_FUTURE
            // cell tests that opted-in path, retry topics and all (KafkaRecordListeners.async).
            "sumi.kafka.allow-async-listeners=true"
        })
abstract class KafkaCatalogueTests extends ConformanceCatalogue implements ListenerKind {

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
    Work work;

    @Autowired
    DataSource dataSource;

    @Autowired
    MeterRegistry meters;

    @Autowired
    BudgetWindow budgetWindow;

    @Autowired
    LedgerFaults ledgerFaults;

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
    public CompletableFuture<Void> stop(Role role) {
        MessageListenerContainer container = Objects.requireNonNull(registry.getListenerContainer(listenerId(role)));
        CompletableFuture<Void> stopped = new CompletableFuture<>();
        // Asynchronous: the consumer thread stops once its handler returned.
        container.stop(() -> stopped.complete(null));
        await().atMost(Duration.ofSeconds(30)).until(() -> !container.isRunning());
        return stopped;
    }

    @Override
    public void start(Role role) {
        Objects.requireNonNull(registry.getListenerContainer(listenerId(role))).start();
    }

    @Override
    public BudgetWindow budgetWindow() {
        return budgetWindow;
    }

    String listenerId(Role role) {
        return "kafka-" + shape() + "-" + role.slug();
    }

    @Override
    public String consumer(Role role) {
        return listenerId(role);
    }

    @Override
    public Work work() {
        return work;
    }

    @Override
    public DataSource dataSource() {
        return dataSource;
    }

    @Override
    public MeterRegistry meters() {
        return meters;
    }

    @Override
    public LedgerFaults ledgerFaults() {
        return ledgerFaults;
    }

    @Override
    public void stopListener(Role role) {
        container(role).stop();
    }

    @Override
    public void startListener(Role role) {
        MessageListenerContainer container = container(role);
        container.start();
        waitForEveryConsumersPartitions(container);
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

    @Override
    public boolean listenerRunning(Role role) {
        return container(role).isRunning();
    }

    /** The members of the listener's consumer group (its id): a stopped container's consumer has left it. */
    @Override
    public @Nullable String stillConsuming(Role role) throws Exception {
        try (Admin admin = Admin.create(kafkaAdmin.getConfigurationProperties())) {
            ConsumerGroupDescription group = admin.describeConsumerGroups(List.of(listenerId(role)))
                    .describedGroups()
                    .get(listenerId(role))
                    .get(30, TimeUnit.SECONDS);
            return group.members().isEmpty() ? null : "members of group " + group.groupId() + ": " + group.members();
        }
    }

    private MessageListenerContainer container(Role role) {
        MessageListenerContainer container = registry.getListenerContainer(listenerId(role));
        if (container == null) {
            throw new IllegalStateException("no listener container " + listenerId(role));
        }
        return container;
    }
}
