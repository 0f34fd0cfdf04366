package io.sumi.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentHandler;
import io.sumi.store.ClaimRequest;
import io.sumi.store.MessageStatus;
import io.sumi.store.ProcessedMessage;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.admin.AdminClient;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.kafka.autoconfigure.ConcurrentKafkaListenerContainerFactoryConfigurer;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.config.ConcurrentKafkaListenerContainerFactory;
import org.springframework.kafka.config.ContainerPostProcessor;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.core.ConsumerFactory;
import org.springframework.kafka.core.KafkaAdmin;
import org.springframework.kafka.listener.AbstractMessageListenerContainer;
import org.springframework.kafka.listener.ContainerProperties.AckMode;
import org.springframework.kafka.support.Acknowledgment;

/**
 * Manual acknowledgement ({@code AckMode.MANUAL} / {@code MANUAL_IMMEDIATE}) on
 * {@code @IdempotentHandler} listeners (issue 19, A3 and A6): a {@code nack()} is not success (the
 * row is not completed, the redelivery the nack asked for runs the record), a batch
 * {@code nack(index)} completes the records before the index only, and an {@code acknowledge()}
 * inside the handler commits nothing before the record's completion is written. Run with and
 * without the poll claim by the two subclasses (one context each, shared by their tests, with topics
 * and consumer groups of their own on the suite's one broker).
 */
abstract class KafkaManualAckTestBase extends KafkaStarterTestBase {

    @Autowired
    Effects effects;

    @Autowired
    KafkaListenerEndpointRegistry registry;

    @Autowired
    KafkaAdmin admin;

    @Autowired
    JdbcTemplate jdbc;

    @Autowired
    MeterRegistry meters;

    /**
     * Each subclass's own suffix for the topics and consumer groups, which live on the suite's one
     * broker: the other subclass's context, cached, still has its containers in its groups.
     */
    @Value("${sumi.test.topic-suffix}")
    String topicSuffix;

    static ProducerRecord<String, String> record(String topic, String key) {
        ProducerRecord<String, String> record = new ProducerRecord<>(topic, key, "payload-" + key);
        record.headers().add("outbox-id", key.getBytes(StandardCharsets.UTF_8));
        return record;
    }

    void send(String topic, String... keys) {
        for (String key : keys) {
            template.send(record(topic, key));
        }
        template.flush();
    }

    @Test
    void aNackedRecordIsNotCompletedAndTheRedeliveryItAskedForRunsIt() throws Exception {
        effects.nackOnce.add("m1");
        send("ma.record" + topicSuffix, "m0", "m1", "m2");
        registry.getListenerContainer("ma-record").start();

        await().atMost(Duration.ofSeconds(30))
                .until(() -> committed("ma-record" + topicSuffix, "ma.record" + topicSuffix) == 3);
        assertThat(effects.attempts("ma-record", "m1"))
                .as("the nacked record ran again on its redelivery")
                .isEqualTo(2);
        assertThat(effects.counts("ma-record"))
                .containsOnlyKeys("m0", "m1", "m2")
                .allSatisfy((key, count) -> assertThat(count.get()).as(key).isEqualTo(1));
        for (String key : List.of("m0", "m1", "m2")) {
            assertThat(store.find("ma-record", key))
                    .get()
                    .extracting(ProcessedMessage::status)
                    .isEqualTo(MessageStatus.COMPLETED);
        }
        assertThat(store.find("ma-record", "m1").orElseThrow().attempts()).isEqualTo(2);
        assertThat(count("ma-record", "not_done")).isEqualTo(1);
        assertThat(count("ma-record", "duplicate")).isZero();
    }

    @Test
    void aNackInTransactionalModeRollsTheHandlersRowsBackAndTheRedeliveryRunsIt() throws Exception {
        effects.nackOnce.add("t1");
        send("ma.tx" + topicSuffix, "t0", "t1", "t2");
        registry.getListenerContainer("ma-tx").start();

        await().atMost(Duration.ofSeconds(30))
                .until(() -> committed("ma-tx" + topicSuffix, "ma.tx" + topicSuffix) == 3);
        assertThat(effects.attempts("ma-tx", "t1")).isEqualTo(2);
        // The nacked run's row was rolled back with the nack: one row per key, not two for t1.
        assertThat(jdbc.queryForList(
                        "SELECT message_id FROM sumi_test_manual_ack_effects WHERE consumer = 'ma-tx' ORDER BY message_id",
                        String.class))
                .containsExactly("t0", "t1", "t2");
        assertThat(store.find("ma-tx", "t1").orElseThrow().status()).isEqualTo(MessageStatus.COMPLETED);
    }

    @Test
    void aBatchNackAtAnIndexCompletesTheRecordsBeforeItAndRedeliversTheRest() throws Exception {
        // k1 is done before: the listener sees [k0, k2, k3, k4, k5] and nacks at its index 2 (k3),
        // which is index 3 of the batch the container delivered.
        ProcessedMessage done = store.claim("ma-batch", new ClaimRequest("k1", null), Duration.ofSeconds(30))
                .message();
        store.complete(done);
        effects.nackBatchAt.add("k3");
        send("ma.batch" + topicSuffix, "k0", "k1", "k2", "k3", "k4", "k5");
        registry.getListenerContainer("ma-batch").start();

        await().atMost(Duration.ofSeconds(30))
                .until(() -> committed("ma-batch" + topicSuffix, "ma.batch" + topicSuffix) == 6);
        assertThat(effects.batches).first().isEqualTo(List.of("k0", "k2", "k3", "k4", "k5"));
        assertThat(effects.counts("ma-batch"))
                .containsOnlyKeys("k0", "k2", "k3", "k4", "k5")
                .allSatisfy((key, count) -> assertThat(count.get()).as(key).isEqualTo(1));
        for (String key : List.of("k3", "k4", "k5")) {
            assertThat(effects.attempts("ma-batch", key)).as(key).isEqualTo(2);
        }
        for (String key : List.of("k0", "k2")) {
            assertThat(effects.attempts("ma-batch", key)).as(key).isEqualTo(1);
        }
        for (String key : List.of("k0", "k1", "k2", "k3", "k4", "k5")) {
            assertThat(store.find("ma-batch", key))
                    .get()
                    .extracting(ProcessedMessage::status)
                    .isEqualTo(MessageStatus.COMPLETED);
        }
    }

    @Test
    void anAcknowledgeInsideTheHandlerCommitsNothingBeforeTheRecordsCompletionIsWritten() throws Exception {
        send("ma.immediate" + topicSuffix, "i0", "i1", "i2");
        registry.getListenerContainer("ma-immediate").start();

        // The handler notes what it saw after its acknowledge(), so the last note may follow the last commit.
        await().atMost(Duration.ofSeconds(30))
                .until(() -> effects.committedInsideHandler.size() == 3
                        && committed("ma-immediate" + topicSuffix, "ma.immediate" + topicSuffix) == 3);
        // With MANUAL_IMMEDIATE the container commits inside acknowledge(): before the fix, the
        // handler already saw its own record's offset committed while its row was IN_PROGRESS.
        assertThat(effects.committedInsideHandler)
                .as("offset committed, inside the handler right after acknowledge(), vs the record's offset")
                .allSatisfy(seen -> assertThat(seen.committed()).as(seen.key()).isLessThanOrEqualTo(seen.offset()));
        for (String key : List.of("i0", "i1", "i2")) {
            assertThat(store.find("ma-immediate", key).orElseThrow().status()).isEqualTo(MessageStatus.COMPLETED);
        }
    }

    double count(String consumer, String outcome) {
        var counter = meters.find("sumi.messages")
                .tag("consumer", consumer)
                .tag("outcome", outcome)
                .counter();
        return counter == null ? 0 : counter.count();
    }

    long committed(String group, String topic) throws Exception {
        return committed(admin, group, topic);
    }

    static long committed(KafkaAdmin admin, String group, String topic) throws Exception {
        try (AdminClient client = AdminClient.create(admin.getConfigurationProperties())) {
            OffsetAndMetadata offset = client.listConsumerGroupOffsets(group)
                    .partitionsToOffsetAndMetadata()
                    .get(10, TimeUnit.SECONDS)
                    .get(new TopicPartition(topic, 0));
            return offset == null ? 0 : offset.offset();
        }
    }

    /** The offset committed for a record's partition, read inside its handler after {@code acknowledge()}. */
    record SeenCommit(String key, long offset, long committed) {}

    /** What the listeners did, per ledger consumer and key. */
    static class Effects {
        final Map<String, Map<String, AtomicInteger>> counts = new ConcurrentHashMap<>();
        final Map<String, AtomicInteger> attempts = new ConcurrentHashMap<>();
        final Set<String> nackOnce = ConcurrentHashMap.newKeySet();
        final Set<String> nackBatchAt = ConcurrentHashMap.newKeySet();
        final List<List<String>> batches = new CopyOnWriteArrayList<>();
        final List<SeenCommit> committedInsideHandler = new CopyOnWriteArrayList<>();

        void attempt(String consumer, String key) {
            attempts.computeIfAbsent(consumer + "/" + key, k -> new AtomicInteger())
                    .incrementAndGet();
        }

        void effect(String consumer, String key) {
            counts(consumer).computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
        }

        Map<String, AtomicInteger> counts(String consumer) {
            return counts.computeIfAbsent(consumer, k -> new ConcurrentHashMap<>());
        }

        int attempts(String consumer, String key) {
            AtomicInteger count = attempts.get(consumer + "/" + key);
            return count == null ? 0 : count.get();
        }
    }

    static class Listeners {
        private final Effects effects;
        private final JdbcTemplate jdbc;
        private final KafkaAdmin admin;
        private final String topicSuffix;

        Listeners(Effects effects, JdbcTemplate jdbc, KafkaAdmin admin, String topicSuffix) {
            this.effects = effects;
            this.jdbc = jdbc;
            this.admin = admin;
            this.topicSuffix = topicSuffix;
        }

        @KafkaListener(
                id = "ma-record",
                topics = "ma.record${sumi.test.topic-suffix}",
                groupId = "ma-record${sumi.test.topic-suffix}",
                autoStartup = "false",
                containerPostProcessor = "manualAck")
        @IdempotentHandler(consumer = "ma-record", mode = IdempotencyMode.LEASE)
        void record(ConsumerRecord<String, String> record, Acknowledgment ack) {
            effects.attempt("ma-record", record.key());
            if (effects.nackOnce.remove(record.key())) {
                ack.nack(Duration.ZERO);
                return;
            }
            effects.effect("ma-record", record.key());
            ack.acknowledge();
        }

        @KafkaListener(
                id = "ma-tx",
                topics = "ma.tx${sumi.test.topic-suffix}",
                groupId = "ma-tx${sumi.test.topic-suffix}",
                autoStartup = "false",
                containerPostProcessor = "manualAck")
        @IdempotentHandler(consumer = "ma-tx", mode = IdempotencyMode.TRANSACTIONAL)
        void transactional(ConsumerRecord<String, String> record, Acknowledgment ack) {
            effects.attempt("ma-tx", record.key());
            jdbc.update(
                    "INSERT INTO sumi_test_manual_ack_effects (consumer, message_id) VALUES ('ma-tx', ?)",
                    record.key());
            if (effects.nackOnce.remove(record.key())) {
                ack.nack(Duration.ZERO);
                return;
            }
            ack.acknowledge();
        }

        @KafkaListener(
                id = "ma-batch",
                topics = "ma.batch${sumi.test.topic-suffix}",
                groupId = "ma-batch${sumi.test.topic-suffix}",
                autoStartup = "false",
                containerFactory = "manualBatchFactory")
        @IdempotentHandler(consumer = "ma-batch", mode = IdempotencyMode.LEASE)
        void batch(List<ConsumerRecord<String, String>> records, Acknowledgment ack) {
            List<String> keys = new ArrayList<>();
            records.forEach(record -> keys.add(record.key()));
            effects.batches.add(keys);
            for (int i = 0; i < records.size(); i++) {
                String key = records.get(i).key();
                effects.attempt("ma-batch", key);
                if (effects.nackBatchAt.remove(key)) {
                    // The records after the nacked one are not processed in this delivery either.
                    for (int j = i + 1; j < records.size(); j++) {
                        effects.attempt("ma-batch", records.get(j).key());
                    }
                    ack.nack(i, Duration.ZERO);
                    return;
                }
                effects.effect("ma-batch", key);
            }
            ack.acknowledge();
        }

        @KafkaListener(
                id = "ma-immediate",
                topics = "ma.immediate${sumi.test.topic-suffix}",
                groupId = "ma-immediate${sumi.test.topic-suffix}",
                autoStartup = "false",
                containerPostProcessor = "manualImmediateAck")
        @IdempotentHandler(consumer = "ma-immediate", mode = IdempotencyMode.LEASE)
        void immediate(ConsumerRecord<String, String> record, Acknowledgment ack) throws Exception {
            ack.acknowledge();
            effects.committedInsideHandler.add(new SeenCommit(
                    record.key(), record.offset(), committed(admin, "ma-immediate" + topicSuffix, record.topic())));
        }
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
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
        Listeners listeners(
                Effects effects,
                JdbcTemplate jdbc,
                KafkaAdmin admin,
                @Value("${sumi.test.topic-suffix}") String topicSuffix) {
            jdbc.execute(
                    "CREATE TABLE IF NOT EXISTS sumi_test_manual_ack_effects (consumer VARCHAR(200), message_id VARCHAR(200))");
            jdbc.update("DELETE FROM sumi_test_manual_ack_effects");
            jdbc.update("DELETE FROM processed_messages WHERE consumer LIKE 'ma-%'");
            return new Listeners(effects, jdbc, admin, topicSuffix);
        }

        @Bean
        KafkaAdmin.NewTopics topics(@Value("${sumi.test.topic-suffix}") String topicSuffix) {
            return new KafkaAdmin.NewTopics(
                    new NewTopic("ma.record" + topicSuffix, 1, (short) 1),
                    new NewTopic("ma.tx" + topicSuffix, 1, (short) 1),
                    new NewTopic("ma.batch" + topicSuffix, 1, (short) 1),
                    new NewTopic("ma.immediate" + topicSuffix, 1, (short) 1));
        }

        @Bean
        ContainerPostProcessor<Object, Object, AbstractMessageListenerContainer<Object, Object>> manualAck() {
            return container -> container.getContainerProperties().setAckMode(AckMode.MANUAL);
        }

        @Bean
        ContainerPostProcessor<Object, Object, AbstractMessageListenerContainer<Object, Object>> manualImmediateAck() {
            return container -> container.getContainerProperties().setAckMode(AckMode.MANUAL_IMMEDIATE);
        }

        @Bean
        ConcurrentKafkaListenerContainerFactory<Object, Object> manualBatchFactory(
                ConcurrentKafkaListenerContainerFactoryConfigurer configurer,
                ConsumerFactory<Object, Object> consumerFactory) {
            ConcurrentKafkaListenerContainerFactory<Object, Object> factory =
                    new ConcurrentKafkaListenerContainerFactory<>();
            configurer.configure(factory, consumerFactory);
            factory.setBatchListener(true);
            factory.getContainerProperties().setAckMode(AckMode.MANUAL);
            return factory;
        }
    }
}
