package io.sumi.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sumi.consumer.IdempotencyContext;
import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentHandler;
import io.sumi.kafka.BudgetAwareErrorHandler;
import io.sumi.store.ClaimOutcome;
import io.sumi.store.ClaimRequest;
import io.sumi.store.ClaimResult;
import io.sumi.store.MessageStatus;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.kafka.autoconfigure.ConcurrentKafkaListenerContainerFactoryConfigurer;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.config.ConcurrentKafkaListenerContainerFactory;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.core.ConsumerFactory;
import org.springframework.kafka.core.KafkaAdmin;
import org.springframework.kafka.listener.AbstractMessageListenerContainer;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.messaging.Message;
import org.springframework.messaging.support.MessageBuilder;
import org.springframework.util.backoff.FixedBackOff;

/**
 * Issue 8, defects 1 and 4, as a user's application meets them: no error-handler bean at all
 * (Spring Kafka's default handler), a handler set on a factory, a batch listener, the budget
 * pauser's wrapping (the starter always installs it), and annotated methods that are not the
 * listener. A busy key is held by a claim made directly in the ledger, as a killed instance would
 * leave it, and let go once the record has been retried past Spring Kafka's default ten attempts.
 */
@SpringBootTest(
        classes = KafkaErrorHandlingIntegrationTests.App.class,
        properties = {
            "spring.kafka.consumer.auto-offset-reset=earliest",
            "spring.kafka.consumer.max-poll-records=10",
            "spring.kafka.listener.concurrency=1",
            "spring.flyway.locations=classpath:db/sumi/{vendor}",
            "sumi.kafka.busy-retry-interval=50ms",
            "sumi.consumer.lease=30s"
        })
class KafkaErrorHandlingIntegrationTests extends KafkaStarterTestBase {

    /** More busy attempts than Spring Kafka's default error handler makes before it skips a record. */
    static final int PAST_DEFAULT_ATTEMPTS = 15;

    @Autowired
    Effects effects;

    @Autowired
    MeterRegistry meters;

    @Autowired
    JdbcTemplate jdbc;

    @Autowired
    KafkaListenerEndpointRegistry registry;

    static ProducerRecord<String, String> record(String topic, String key) {
        ProducerRecord<String, String> record = new ProducerRecord<>(topic, key, "payload of " + key);
        record.headers().add("outbox-id", key.getBytes(StandardCharsets.UTF_8));
        return record;
    }

    void send(List<ProducerRecord<String, String>> records) {
        records.forEach(template::send);
        template.flush();
    }

    /** Instance A claimed the key with a long lease and was killed: the key is BUSY until the claim goes. */
    ClaimResult claimAsKilledInstance(String consumer, String key) {
        ClaimResult claim = store.claim(consumer, new ClaimRequest(key, null), Duration.ofMinutes(5));
        assertThat(claim.outcome()).isEqualTo(ClaimOutcome.CLAIMED);
        return claim;
    }

    double count(String consumer, String outcome) {
        io.micrometer.core.instrument.Counter counter = meters.find("sumi.messages")
                .tag("consumer", consumer)
                .tag("outcome", outcome)
                .counter();
        return counter == null ? 0 : counter.count();
    }

    /**
     * Retried past the default ten attempts while busy, never run meanwhile; once the dead claim is
     * gone (released here, as an expired lease would be taken over), processed exactly once.
     */
    void assertBusyKeyIsRetriedUntilItCanRun(String consumer, String key, ClaimResult deadClaim) {
        await().atMost(Duration.ofSeconds(20)).until(() -> count(consumer, "busy") >= PAST_DEFAULT_ATTEMPTS);
        assertThat(effects.count(consumer, key))
                .as("not run while another claim holds it")
                .isZero();
        assertThat(store.release(deadClaim.message(), "instance A was killed")).isTrue();
        await().atMost(Duration.ofSeconds(20)).until(() -> effects.count(consumer, key) == 1);
        // The effect is counted inside the handler, just before the executor completes the row.
        await().atMost(Duration.ofSeconds(10))
                .untilAsserted(() -> assertThat(store.find(consumer, key))
                        .get()
                        .extracting(row -> row.status())
                        .isEqualTo(MessageStatus.COMPLETED));
        assertThat(effects.count(consumer, key)).as("run exactly once").isEqualTo(1);
    }

    @Test
    void busyKeyIsRetriedWithoutErrorHandlerBean() {
        ClaimResult dead = claimAsKilledInstance("busy-default", "k1");
        send(List.of(record("busy.default", "k1")));

        assertBusyKeyIsRetriedUntilItCanRun("busy-default", "k1", dead);
    }

    @Test
    void busyKeyIsRetriedWithAHandlerSetOnTheFactory() {
        ClaimResult dead = claimAsKilledInstance("busy-factory", "k1");
        send(List.of(record("busy.factory", "k1")));

        assertBusyKeyIsRetriedUntilItCanRun("busy-factory", "k1", dead);
        // The user's own handler, wrapped by the budget pauser, taught rather than replaced.
        AbstractMessageListenerContainer<?, ?> container =
                (AbstractMessageListenerContainer<?, ?>) registry.getListenerContainer("busy-factory");
        assertThat(((BudgetAwareErrorHandler) container.getCommonErrorHandler()).delegate())
                .isSameAs(effects.factoryHandler);
    }

    @Test
    void busyKeyInABatchIsRetriedAndTheRecordsAroundItAreProcessed() {
        ClaimResult dead = claimAsKilledInstance("busy-batch", "b1");
        send(List.of(record("busy.batch", "b0"), record("busy.batch", "b1"), record("busy.batch", "b2")));
        registry.getListenerContainer("busy-batch").start();

        assertBusyKeyIsRetriedUntilItCanRun("busy-batch", "b1", dead);
        await().atMost(Duration.ofSeconds(20)).until(() -> effects.count("busy-batch", "b2") == 1);
        assertThat(effects.count("busy-batch", "b0")).isEqualTo(1);
    }

    /**
     * A user's non-blocking retries ({@code @RetryableTopic}): the retry-topic machinery's own error
     * handler must not forward a busy key to the retry topics and on to the DLT (where, after the
     * holder died, nothing would run it); it waits on the main topic, then runs once.
     */
    @Test
    void busyKeyUnderRetryableTopicIsNotForwardedToRetryTopicsOrTheDlt() {
        ClaimResult dead = claimAsKilledInstance("busy-retryable", "k1");
        send(List.of(record("busy.retryable", "k1")));

        assertBusyKeyIsRetriedUntilItCanRun("busy-retryable", "k1", dead);
        assertThat(effects.retryableTopics).containsExactly("busy.retryable");
        assertThat(effects.retryableDlt).isEmpty();
    }

    /** A concurrent container (concurrency 3, 3 partitions): a busy key on one child is retried, the others' keys run. */
    @Test
    void busyKeyOnAConcurrentContainerIsRetriedAndOtherPartitionsRun() {
        ClaimResult dead = claimAsKilledInstance("busy-concurrent", "k1");
        List<ProducerRecord<String, String>> records = new ArrayList<>();
        for (int partition = 0; partition < 3; partition++) {
            for (int i = 0; i < 5; i++) {
                String key = i == 0 && partition == 0 ? "k1" : "p" + partition + "-" + i;
                ProducerRecord<String, String> record =
                        new ProducerRecord<>("busy.concurrent", partition, key, "payload of " + key);
                record.headers().add("outbox-id", key.getBytes(StandardCharsets.UTF_8));
                records.add(record);
            }
        }
        send(records);

        await().atMost(Duration.ofSeconds(20))
                .until(() ->
                        effects.count("busy-concurrent", "p1-4") == 1 && effects.count("busy-concurrent", "p2-4") == 1);
        assertBusyKeyIsRetriedUntilItCanRun("busy-concurrent", "k1", dead);
        await().atMost(Duration.ofSeconds(20)).until(() -> effects.count("busy-concurrent", "p0-4") == 1);
        assertThat(effects.counts.get("busy-concurrent"))
                .hasSize(15)
                .allSatisfy((key, count) -> assertThat(count.get()).as(key).isOne());
    }

    /** Defect 4: a batch listener calling an annotated per-record method: each record is its own invocation. */
    @Test
    void aBatchListenerCallingAnAnnotatedPerRecordMethodRunsEveryRecord() {
        List<ProducerRecord<String, String>> records = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            records.add(record("per.record", "r" + i));
        }
        send(records);
        registry.getListenerContainer("per-record-batch").start();

        await().atMost(Duration.ofSeconds(20))
                .until(() -> effects.batchListenerRecords.get() == 10
                        && count("per-record", "processed") + count("per-record", "duplicate") >= 10);
        for (int i = 0; i < 10; i++) {
            assertThat(effects.count("per-record", "r" + i)).as("r" + i).isEqualTo(1);
        }
        assertThat(jdbc.queryForObject(
                        "SELECT COUNT(*) FROM processed_messages WHERE consumer = 'per-record' AND status = 'COMPLETED'",
                        Integer.class))
                .isEqualTo(10);
        assertThat(count("per-record", "duplicate")).isZero();
    }

    /** Defect 4: a listener fanning out to an annotated method: each sub-message is guarded by its own key. */
    @Test
    void aListenerFanningOutToAnAnnotatedMethodGuardsEachSubMessageByItsOwnKey() {
        send(List.of(record("fan.out", "order-1")));

        await().atMost(Duration.ofSeconds(20)).until(() -> effects.fanOutKeys.size() == 3);
        assertThat(effects.fanOutKeys).containsExactlyInAnyOrder("order-1/line-0", "order-1/line-1", "order-1/line-2");
        assertThat(store.find("fan-out-lines", "order-1/line-2"))
                .get()
                .extracting(row -> row.status())
                .isEqualTo(MessageStatus.COMPLETED);
        assertThat(store.find("fan-out-lines", "order-1")).isEmpty();
    }

    /** What the listeners did. */
    static class Effects {
        final Map<String, Map<String, AtomicInteger>> counts = new ConcurrentHashMap<>();
        final AtomicInteger batchListenerRecords = new AtomicInteger();
        final List<String> fanOutKeys = Collections.synchronizedList(new ArrayList<>());
        final List<String> retryableTopics = Collections.synchronizedList(new ArrayList<>());
        final List<String> retryableDlt = Collections.synchronizedList(new ArrayList<>());
        volatile DefaultErrorHandler factoryHandler;

        void effect(String consumer, String key) {
            counts.computeIfAbsent(consumer, c -> new ConcurrentHashMap<>())
                    .computeIfAbsent(key, k -> new AtomicInteger())
                    .incrementAndGet();
        }

        int count(String consumer, String key) {
            AtomicInteger count = counts.getOrDefault(consumer, Map.of()).get(key);
            return count == null ? 0 : count.get();
        }
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @org.springframework.kafka.annotation.EnableKafkaRetryTopic
    static class App {

        @Bean
        Effects effects() {
            return new Effects();
        }

        @Bean
        MeterRegistry meterRegistry() {
            return new SimpleMeterRegistry();
        }

        @Bean
        KafkaAdmin.NewTopics topics() {
            return new KafkaAdmin.NewTopics(
                    new NewTopic("busy.default", 1, (short) 1),
                    new NewTopic("busy.factory", 1, (short) 1),
                    new NewTopic("busy.batch", 1, (short) 1),
                    new NewTopic("per.record", 1, (short) 1),
                    new NewTopic("fan.out", 1, (short) 1),
                    new NewTopic("busy.concurrent", 3, (short) 1));
        }

        /** A factory whose error handler the application sets itself (no bean): two quick retries, then the logging recoverer. */
        @Bean
        ConcurrentKafkaListenerContainerFactory<Object, Object> userHandlerFactory(
                Effects effects,
                ConcurrentKafkaListenerContainerFactoryConfigurer configurer,
                ConsumerFactory<Object, Object> consumerFactory) {
            ConcurrentKafkaListenerContainerFactory<Object, Object> factory =
                    new ConcurrentKafkaListenerContainerFactory<>();
            configurer.configure(factory, consumerFactory);
            effects.factoryHandler = new DefaultErrorHandler(new FixedBackOff(0, 2));
            factory.setCommonErrorHandler(effects.factoryHandler);
            return factory;
        }

        @Bean
        ConcurrentKafkaListenerContainerFactory<Object, Object> batchFactory(
                ConcurrentKafkaListenerContainerFactoryConfigurer configurer,
                ConsumerFactory<Object, Object> consumerFactory) {
            ConcurrentKafkaListenerContainerFactory<Object, Object> factory =
                    new ConcurrentKafkaListenerContainerFactory<>();
            configurer.configure(factory, consumerFactory);
            factory.setBatchListener(true);
            return factory;
        }

        @Bean
        Listeners listeners(Effects effects, Lines lines, JdbcTemplate jdbc) {
            jdbc.update(
                    "DELETE FROM processed_messages WHERE consumer IN ('busy-default', 'busy-factory', 'busy-batch', 'per-record',"
                            + " 'fan-out-lines', 'busy-retryable', 'busy-concurrent')");
            return new Listeners(effects, lines);
        }

        @Bean
        Lines lines(Effects effects) {
            return new Lines(effects);
        }
    }

    /** Annotated methods that are not listeners: listeners call them. */
    static class Lines {

        private final Effects effects;

        Lines(Effects effects) {
            this.effects = effects;
        }

        @IdempotentHandler(consumer = "per-record", mode = IdempotencyMode.LEASE)
        public void handle(ConsumerRecord<String, String> record) {
            effects.effect("per-record", IdempotencyContext.current().key());
        }

        @IdempotentHandler(consumer = "fan-out-lines", mode = IdempotencyMode.LEASE)
        public void handleLine(Message<String> line) {
            effects.fanOutKeys.add(IdempotencyContext.current().key());
        }
    }

    static class Listeners {

        private final Effects effects;
        private final Lines lines;

        Listeners(Effects effects, Lines lines) {
            this.effects = effects;
            this.lines = lines;
        }

        @KafkaListener(id = "busy-default", topics = "busy.default")
        @IdempotentHandler(mode = IdempotencyMode.LEASE)
        public void onDefault(ConsumerRecord<String, String> record) {
            effects.effect("busy-default", record.key());
        }

        @KafkaListener(id = "busy-factory", topics = "busy.factory", containerFactory = "userHandlerFactory")
        @IdempotentHandler(mode = IdempotencyMode.LEASE)
        public void onFactory(String payload) {
            effects.effect("busy-factory", IdempotencyContext.current().key());
        }

        @KafkaListener(
                id = "busy-batch",
                topics = "busy.batch",
                containerFactory = "batchFactory",
                autoStartup = "false")
        @IdempotentHandler(mode = IdempotencyMode.LEASE)
        public void onBatch(List<ConsumerRecord<String, String>> records) {
            records.forEach(record -> effects.effect("busy-batch", record.key()));
        }

        @KafkaListener(id = "busy-retryable", topics = "busy.retryable")
        @org.springframework.kafka.annotation.RetryableTopic(
                attempts = "3",
                backOff = @org.springframework.kafka.annotation.BackOff(delay = 50))
        @IdempotentHandler(mode = IdempotencyMode.LEASE)
        public void onRetryable(ConsumerRecord<String, String> record) {
            effects.retryableTopics.add(record.topic());
            effects.effect("busy-retryable", record.key());
        }

        @org.springframework.kafka.annotation.DltHandler
        public void onRetryableDlt(ConsumerRecord<String, String> record) {
            effects.retryableDlt.add(record.key());
        }

        @KafkaListener(id = "busy-concurrent", topics = "busy.concurrent", concurrency = "3")
        @IdempotentHandler(mode = IdempotencyMode.LEASE)
        public void onConcurrent(ConsumerRecord<String, String> record) {
            effects.effect("busy-concurrent", record.key());
        }

        /** Not annotated itself: guards each record through the annotated per-record method. */
        @KafkaListener(
                id = "per-record-batch",
                topics = "per.record",
                containerFactory = "batchFactory",
                autoStartup = "false")
        public void onPerRecordBatch(List<ConsumerRecord<String, String>> records) {
            for (ConsumerRecord<String, String> record : records) {
                effects.batchListenerRecords.incrementAndGet();
                lines.handle(record);
            }
        }

        /** One order, three lines: each line is a message of its own with its own key. */
        @KafkaListener(id = "fan-out", topics = "fan.out")
        public void onOrder(ConsumerRecord<String, String> order) {
            for (int i = 0; i < 3; i++) {
                lines.handleLine(MessageBuilder.withPayload("line " + i)
                        .setHeader("idempotency-key", order.key() + "/line-" + i)
                        .build());
            }
        }
    }
}
