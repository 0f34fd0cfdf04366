package io.sumi.kafka.share.conformance;

import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.search.Search;
import io.sumi.conformance.CatalogueDriver;
import io.sumi.conformance.ListenerKind;
import io.sumi.conformance.Outgoing;
import io.sumi.conformance.Role;
import io.sumi.conformance.Scenario;
import io.sumi.kafka.share.ShareGroups;
import io.sumi.testing.TestDatabase;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Order;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.core.KafkaAdmin;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.listener.MessageListenerContainer;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The catalogue on share-group (KIP-932) record listeners, kind {@code kafka-share}: {@link
 * ShareCatalogueApp} on the catalogue's share broker ({@link ShareCatalogueKafka}), the ledger in
 * PostgreSQL. Spring Boot 4.1 only, like the module.
 */
@Order(10)
@SpringBootTest(
        classes = ShareCatalogueApp.class,
        properties = {
            "spring.main.banner-mode=off",
            "sumi.outbox.dispatcher.enabled=false",
            "spring.flyway.locations=classpath:db/sumi/{vendor}",
            // The dead-letter consumer (an ordinary group) reads every dead letter.
            "spring.kafka.consumer.auto-offset-reset=earliest",
            "spring.kafka.consumer.properties.metadata.max.age.ms=1000"
        })
class KafkaShareConformanceTests extends CatalogueDriver {

    /** The roles whose container has one consumer (ShareCatalogueApp.shareSingleFactory); the others have two. */
    private static final Map<Role, Integer> SINGLE = Map.of(Role.STOP, 1, Role.BUDGET, 1);

    @DynamicPropertySource
    static void services(DynamicPropertyRegistry registry) {
        TestDatabase.POSTGRESQL.registerDataSource("sumi_share_catalogue", registry::add);
        registry.add("spring.kafka.bootstrap-servers", ShareCatalogueKafka::bootstrapServers);
        // The catalogue's pace (CatalogueDriver) for the share listeners' held records.
        registry.add("sumi.kafka.share.busy-retry-interval", () -> "200ms");
    }

    @Autowired
    KafkaTemplate<String, String> template;

    @Autowired
    KafkaListenerEndpointRegistry registry;

    @Autowired
    KafkaAdmin kafkaAdmin;

    @Override
    public String id() {
        return "kafka-share";
    }

    @Override
    public boolean batch() {
        return false;
    }

    @Override
    public Map<Scenario, String> notApplicable() {
        String noFuture = "Spring Kafka drops a share listener's return value, so a future's failure could not"
                + " reach the container: Sumi refuses an @IdempotentHandler share listener that returns one at"
                + " start-up (ShareListenerConfigurer, docs/kafka-share-groups.md)";
        return Map.of(
                Scenario.BAD_KEYS_IN_BATCH,
                "Spring Kafka has no batch share listener (the keyless and invalid-key rows cover it)",
                Scenario.BAD_KEY_TRANSACTED_CONTAINER,
                "a share container has no broker transaction that could undo a settlement",
                Scenario.MANUAL_REJECT,
                "a share group's reject() archives the record (no requeue): release(), the nack row, is its"
                        + " negative acknowledgement that redelivers",
                Scenario.MANUAL_MULTIPLE,
                "a share group acknowledges each record by itself: there is no settlement Sumi could widen to"
                        + " the application's other records",
                Scenario.ASYNC_FAILED_FUTURE,
                noFuture,
                Scenario.ASYNC_FAILED_FUTURE_CONTROL,
                noFuture);
    }

    @Override
    protected ListenerKind kind() {
        // Every role's consumers have joined their share group and hold its partition before a
        // scenario sends (a copy must meet the second consumer, not wait for it to join).
        for (Role role : Role.values()) {
            if (registry.getListenerContainer(ShareCatalogueKafka.listenerId(role)) != null) {
                awaitMembers(role);
            }
        }
        return this;
    }

    @Override
    public void send(Role role, List<Outgoing> messages) throws Exception {
        for (Outgoing message : messages) {
            ProducerRecord<String, String> record =
                    new ProducerRecord<>(ShareCatalogueKafka.topic(role), null, message.payload());
            if (message.key() != null) {
                record.headers().add("idempotency-key", message.key().getBytes(StandardCharsets.UTF_8));
            }
            template.send(record).get(30, TimeUnit.SECONDS);
        }
    }

    @Override
    public String consumer(Role role) {
        return ShareCatalogueKafka.listenerId(role);
    }

    /** A share container cannot pause: a record that meets the open budget is held, its lock renewed. */
    @Override
    public boolean pausesForBudget() {
        return false;
    }

    @Override
    public double budgetHolds() {
        return Search.in(meters)
                .name("sumi.kafka.share.acknowledgements")
                .tag("listener", consumer(Role.BUDGET))
                .tag("type", "renew")
                .counters()
                .stream()
                .mapToDouble(counter -> counter.count())
                .sum();
    }

    /**
     * A share container's stop is synchronous: it marks the container stopped, then waits for its
     * consumer threads to end, that is for their handlers to return (Spring Kafka 4.1,
     * {@code ShareKafkaMessageListenerContainer.doStop}), where the other containers' {@code
     * stop(Runnable)} returns at once. Asked from a thread of its own, as an operator's endpoint
     * call would be, so that the scenario can end the handler it holds while the stop waits.
     */
    @Override
    public CompletableFuture<Void> stop(Role role) {
        MessageListenerContainer container = container(role);
        CompletableFuture<Void> stopped = CompletableFuture.runAsync(
                container::stop, task -> new Thread(task, "catalogue-stop-" + role.slug()).start());
        await("the container of " + role + " stopping")
                .atMost(Duration.ofSeconds(30))
                .until(() -> !listenerRunning(role));
        return stopped;
    }

    @Override
    public void start(Role role) {
        container(role).start();
        awaitMembers(role);
    }

    /** The members of the listener's share group: a stopped container's consumers have left it. */
    @Override
    public @Nullable String stillConsuming(Role role) throws Exception {
        List<String> members = ShareGroups.assignedMembers(
                kafkaAdmin.getConfigurationProperties(), ShareCatalogueKafka.listenerId(role));
        return members.isEmpty()
                ? null
                : "members of share group " + ShareCatalogueKafka.listenerId(role) + ": " + members;
    }

    @Override
    protected MessageListenerContainer container(Role role) {
        return found(
                registry.getListenerContainer(ShareCatalogueKafka.listenerId(role)),
                ShareCatalogueKafka.listenerId(role));
    }

    private void awaitMembers(Role role) {
        int consumers = SINGLE.getOrDefault(role, 2);
        await("the consumers of share group " + ShareCatalogueKafka.listenerId(role) + " assigned")
                .atMost(Duration.ofSeconds(60))
                .until(() -> ShareGroups.assignedMembers(
                                        kafkaAdmin.getConfigurationProperties(), ShareCatalogueKafka.listenerId(role))
                                .size()
                        == consumers);
    }
}
