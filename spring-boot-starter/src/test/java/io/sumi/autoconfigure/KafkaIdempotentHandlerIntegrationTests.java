package io.sumi.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sumi.consumer.IdempotencyContext;
import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentHandler;
import io.sumi.consumer.exception.MissingIdempotencyKeyException;
import io.sumi.store.MessageStatus;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.admin.AdminClient;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
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
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.listener.BatchListenerFailedException;
import org.springframework.kafka.listener.DeadLetterPublishingRecoverer;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.kafka.support.KafkaHeaders;
import org.springframework.messaging.handler.annotation.Header;
import org.springframework.messaging.handler.annotation.Payload;
import org.springframework.util.backoff.FixedBackOff;

/**
 * {@code @IdempotentHandler} on {@code @KafkaListener} methods, wired by the starter alone, against
 * an in-process KRaft broker and a real PostgreSQL. One context serves every test; each test has
 * its own topic.
 */
@SpringBootTest(
        classes = KafkaIdempotentHandlerIntegrationTests.App.class,
        properties = {
            "spring.kafka.consumer.auto-offset-reset=earliest",
            "spring.kafka.consumer.properties.max.poll.interval.ms=60000",
            "spring.kafka.listener.concurrency=1",
            "spring.flyway.locations=classpath:db/sumi/{vendor}",
            "sumi.kafka.busy-retry-interval=100ms",
            "sumi.consumer.lease=30s"
        })
class KafkaIdempotentHandlerIntegrationTests extends KafkaStarterTestBase {

    static final String GROUP_FLAKY = "flaky-group";

    @Autowired
    Effects effects;

    @Autowired
    JdbcTemplate jdbc;

    @Autowired
    MeterRegistry meters;

    @Autowired
    KafkaListenerEndpointRegistry registry;

    @Autowired
    KafkaAdmin admin;

    static ProducerRecord<String, String> record(String topic, String key, String payload) {
        ProducerRecord<String, String> record = new ProducerRecord<>(topic, key, payload);
        record.headers().add("outbox-id", key.getBytes(StandardCharsets.UTF_8));
        return record;
    }

    void sendAndFlush(List<ProducerRecord<String, String>> records) throws Exception {
        for (ProducerRecord<String, String> record : records) {
            template.send(record);
        }
        template.flush();
    }

    @Test
    void duplicatesRunTheHandlerOnceAndAreCounted() throws Exception {
        List<ProducerRecord<String, String>> records = new ArrayList<>();
        for (int i = 0; i < 50; i++) {
            for (int copy = 0; copy < 3; copy++) {
                records.add(record("dup.topic", "dup-" + i, "payload-" + i));
            }
        }
        sendAndFlush(records);

        await().atMost(Duration.ofSeconds(30))
                .until(() -> effects.delivered.get() == 150
                        && meters.find("sumi.messages")
                                        .tag("consumer", "dup-listener")
                                        .tag("outcome", "duplicate")
                                        .counter()
                                != null
                        && meters.get("sumi.messages")
                                        .tag("consumer", "dup-listener")
                                        .tag("outcome", "duplicate")
                                        .counter()
                                        .count()
                                == 100);
        assertThat(effects.counts("dup"))
                .hasSize(50)
                .allSatisfy((key, count) -> assertThat(count.get()).isEqualTo(1));
        assertThat(effects.seenKeys).contains("dup-0", "dup-49");
        assertThat(meters.get("sumi.messages")
                        .tag("consumer", "dup-listener")
                        .tag("outcome", "duplicate")
                        .counter()
                        .count())
                .isEqualTo(100);
        assertThat(store.find("dup-listener", "dup-7"))
                .get()
                .extracting(row -> row.status())
                .isEqualTo(MessageStatus.COMPLETED);
    }

    @Test
    void aHandlerThatThrowsTwiceThenSucceedsIsProcessedOnceAndNotCommittedBefore() throws Exception {
        sendAndFlush(List.of(record("flaky.topic", "flaky-1", "x")));

        await().atMost(Duration.ofSeconds(30))
                .until(() -> effects.counts("flaky").containsKey("flaky-1"));
        assertThat(effects.flakyAttempts.get()).isEqualTo(3);
        assertThat(effects.counts("flaky").get("flaky-1").get()).isEqualTo(1);
        // While it was failing, the group had committed nothing past the record.
        assertThat(effects.committedWhileFailing.get()).isLessThan(1);
        assertThat(store.find("flaky-listener", "flaky-1")).get().satisfies(row -> {
            assertThat(row.status()).isEqualTo(MessageStatus.COMPLETED);
            assertThat(row.attempts()).isEqualTo(3);
        });
        await().atMost(Duration.ofSeconds(10)).until(() -> committedOffset(GROUP_FLAKY, "flaky.topic") == 1);
    }

    @Test
    void aPoisonMessageIsDeadLetteredAfterTheConfiguredAttemptsWithTheReason() throws Exception {
        sendAndFlush(List.of(record("poison.topic", "poison-1", "x")));

        await().atMost(Duration.ofSeconds(30)).until(() -> effects.deadLetters.containsKey("poison.topic-dlt"));
        ConsumerRecord<String, String> dead =
                effects.deadLetters.get("poison.topic-dlt").get(0);
        assertThat(header(dead, KafkaHeaders.DLT_EXCEPTION_MESSAGE)).contains("poisoned payload poison-1");
        assertThat(header(dead, KafkaHeaders.DLT_EXCEPTION_CAUSE_FQCN))
                .isEqualTo(IllegalStateException.class.getName());
        assertThat(effects.poisonAttempts.get()).isEqualTo(3);
        // The ledger never says done: the claim was released with the error.
        assertThat(store.find("poison-listener", "poison-1")).get().satisfies(row -> {
            assertThat(row.status()).isEqualTo(MessageStatus.IN_PROGRESS);
            assertThat(row.lastError()).contains("poisoned payload");
        });
    }

    @Test
    void aMessageWithoutAKeyIsDeadLetteredAtOnceWithAClearError() throws Exception {
        sendAndFlush(List.of(new ProducerRecord<>("nokey.topic", "k", "no key here")));

        await().atMost(Duration.ofSeconds(30)).until(() -> effects.deadLetters.containsKey("nokey.topic-dlt"));
        ConsumerRecord<String, String> dead =
                effects.deadLetters.get("nokey.topic-dlt").get(0);
        assertThat(header(dead, KafkaHeaders.DLT_EXCEPTION_CAUSE_FQCN))
                .isEqualTo(MissingIdempotencyKeyException.class.getName());
        assertThat(header(dead, KafkaHeaders.DLT_EXCEPTION_MESSAGE))
                .contains("No idempotency key")
                .contains("outbox-id");
        assertThat(dead.value()).isEqualTo("no key here");
        assertThat(effects.noKeyCalls.get()).isZero();
        assertThat(meters.get("sumi.messages")
                        .tag("consumer", "nokey-listener")
                        .tag("outcome", "rejected")
                        .counter()
                        .count())
                .isEqualTo(1);
    }

    @Test
    void aBatchWithAFailureInTheMiddleCompletesTheRecordsBeforeItAndRedeliversTheRest() throws Exception {
        List<ProducerRecord<String, String>> records = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            records.add(record("batch.topic", "b" + i, "v" + i));
        }
        records.add(4, record("batch.topic", "b2", "v2")); // a duplicate inside the batch
        sendAndFlush(records);
        registry.getListenerContainer("batch-listener").start();

        await().atMost(Duration.ofSeconds(30))
                .until(() -> effects.counts("batch").size() == 10);
        assertThat(effects.counts("batch"))
                .allSatisfy((key, count) -> assertThat(count.get()).as(key).isEqualTo(1));
        assertThat(effects.batchFailedAtIndex.get())
                .as("the failure was in the middle of a batch")
                .isGreaterThan(0);
        assertThat(effects.batchSizes.get(0))
                .as("the in-batch duplicate was filtered out")
                .isEqualTo(10);
        assertThat(store.find("batch-listener", "b5"))
                .get()
                .extracting(row -> row.attempts())
                .isEqualTo(2);
        assertThat(store.find("batch-listener", "b4"))
                .get()
                .extracting(row -> row.attempts())
                .isEqualTo(1);
    }

    @Test
    void twoConsumerGroupsReceivingTheSameKeysConcurrentlyWriteEachEffectOnce() throws Exception {
        List<ProducerRecord<String, String>> records = new ArrayList<>();
        for (int i = 0; i < 300; i++) {
            // Each key twice, on different partitions, so that it also races within one group.
            records.add(withOutboxId(new ProducerRecord<>("concurrent.topic", i % 3, "c" + i, "v" + i), "c" + i));
            records.add(withOutboxId(new ProducerRecord<>("concurrent.topic", (i + 1) % 3, "c" + i, "v" + i), "c" + i));
        }
        sendAndFlush(records);

        // Both groups see all 600 records: 1,200 deliveries, each processed or skipped as a duplicate.
        await().atMost(Duration.ofSeconds(60))
                .until(() -> count("concurrent", "processed") + count("concurrent", "duplicate") == 1200);
        assertThat(count("concurrent", "processed")).isEqualTo(300);
        assertThat(effects.concurrentDeliveries.get()).isEqualTo(300);
        List<Map<String, Object>> rows = jdbc.queryForList(
                "SELECT message_id, COUNT(*) AS n FROM sumi_test_effects WHERE consumer = 'concurrent' GROUP BY message_id");
        assertThat(rows)
                .hasSize(300)
                .allSatisfy(
                        row -> assertThat(((Number) row.get("n")).intValue()).isEqualTo(1));
    }

    @Test
    void aTransactionalListenerCommitsItsRowsWithTheLedgerRowAndRollsBothBack() throws Exception {
        List<ProducerRecord<String, String>> records = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            records.add(record("txauto.topic", "t" + i, "v" + i));
            records.add(record("txauto.topic", "t" + i, "v" + i));
        }
        sendAndFlush(records);

        await().atMost(Duration.ofSeconds(30))
                .until(() ->
                        count("txauto-listener", "processed") == 20 && count("txauto-listener", "duplicate") == 20);
        // t3's first run wrote its row and then threw: the row rolled back with the ledger row.
        List<Map<String, Object>> rows = jdbc.queryForList(
                "SELECT message_id, COUNT(*) AS n FROM sumi_test_effects WHERE consumer = 'txauto' GROUP BY message_id");
        assertThat(rows)
                .hasSize(20)
                .allSatisfy(
                        row -> assertThat(((Number) row.get("n")).intValue()).isEqualTo(1));
        assertThat(effects.txAutoRunsOfT3.get())
                .as("t3 ran twice: once failing, once committing")
                .isEqualTo(2);
        assertThat(store.find("txauto-listener", "t3"))
                .get()
                .extracting(row -> row.status())
                .isEqualTo(MessageStatus.COMPLETED);
    }

    /** Issue 8, defect 1, with an error-handler bean: a busy key is retried past the bean's own attempts and never skipped. */
    @Test
    void busyKeyIsRetriedWithAnErrorHandlerBeanAndNeverDeadLettered() throws Exception {
        io.sumi.store.ClaimResult dead =
                store.claim("busy-bean", new io.sumi.store.ClaimRequest("bb1", null), Duration.ofMinutes(5));
        assertThat(dead.outcome()).isEqualTo(io.sumi.store.ClaimOutcome.CLAIMED);
        sendAndFlush(List.of(record("busybean.topic", "bb1", "x")));

        await().atMost(Duration.ofSeconds(20)).until(() -> count("busy-bean", "busy") >= 15);
        assertThat(effects.counts("busy-bean")).isEmpty();
        assertThat(store.release(dead.message(), "instance A was killed")).isTrue();
        await().atMost(Duration.ofSeconds(20))
                .until(() -> effects.counts("busy-bean").containsKey("bb1"));
        assertThat(effects.counts("busy-bean").get("bb1").get()).isEqualTo(1);
        assertThat(effects.deadLetters).doesNotContainKey("busybean.topic-dlt");
    }

    @Test
    void theKeyTravelsOnRecordsAndHttpCallsMadeInsideAHandlerAndNowhereElse() throws Exception {
        sendAndFlush(List.of(record("chain.topic", "chain-1", "x")));
        template.send("chained.topic", "outside", "sent outside any handler");
        template.flush();

        await().atMost(Duration.ofSeconds(30)).until(() -> effects.chainedHeaders.size() == 2);
        assertThat(effects.chainedHeaders).containsExactlyInAnyOrder("chain-1", "<none>");
        assertThat(effects.providerKeys).containsExactly("chain-1");
    }

    double count(String consumer, String outcome) {
        io.micrometer.core.instrument.Counter counter = meters.find("sumi.messages")
                .tag("consumer", consumer)
                .tag("outcome", outcome)
                .counter();
        return counter == null ? 0 : counter.count();
    }

    static ProducerRecord<String, String> withOutboxId(ProducerRecord<String, String> record, String key) {
        record.headers().add("outbox-id", key.getBytes(StandardCharsets.UTF_8));
        return record;
    }

    long committedOffset(String group, String topic) throws Exception {
        try (AdminClient client = AdminClient.create(admin.getConfigurationProperties())) {
            OffsetAndMetadata offset = client.listConsumerGroupOffsets(group)
                    .partitionsToOffsetAndMetadata()
                    .get(10, TimeUnit.SECONDS)
                    .get(new TopicPartition(topic, 0));
            return offset == null ? -1 : offset.offset();
        }
    }

    static String header(ConsumerRecord<?, ?> record, String name) {
        org.apache.kafka.common.header.Header header = record.headers().lastHeader(name);
        return header == null ? null : new String(header.value(), StandardCharsets.UTF_8);
    }

    /** What the listeners did, for the tests to check. */
    static class Effects {
        final Map<String, Map<String, AtomicInteger>> counts = new ConcurrentHashMap<>();
        final List<String> seenKeys = Collections.synchronizedList(new ArrayList<>());
        final AtomicInteger delivered = new AtomicInteger();
        final AtomicInteger flakyAttempts = new AtomicInteger();
        final AtomicLong committedWhileFailing = new AtomicLong(Long.MAX_VALUE);
        final AtomicInteger poisonAttempts = new AtomicInteger();
        final AtomicInteger noKeyCalls = new AtomicInteger();
        final AtomicInteger batchFailedAtIndex = new AtomicInteger(-1);
        final List<Integer> batchSizes = Collections.synchronizedList(new ArrayList<>());
        final AtomicInteger concurrentDeliveries = new AtomicInteger();
        final Map<String, List<ConsumerRecord<String, String>>> deadLetters = new ConcurrentHashMap<>();
        final List<String> chainedHeaders = Collections.synchronizedList(new ArrayList<>());
        final List<String> providerKeys = Collections.synchronizedList(new ArrayList<>());
        final AtomicInteger txAutoRunsOfT3 = new AtomicInteger();

        Map<String, AtomicInteger> counts(String listener) {
            return counts.computeIfAbsent(listener, name -> new ConcurrentHashMap<>());
        }

        void effect(String listener, String key) {
            counts(listener).computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
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

        /** A payment provider stub that records the Idempotency-Key of every call. */
        @Bean(destroyMethod = "")
        com.sun.net.httpserver.HttpServer provider(Effects effects) throws java.io.IOException {
            com.sun.net.httpserver.HttpServer server =
                    com.sun.net.httpserver.HttpServer.create(new java.net.InetSocketAddress("127.0.0.1", 0), 0);
            server.createContext("/charges", exchange -> {
                String key = exchange.getRequestHeaders().getFirst("Idempotency-Key");
                effects.providerKeys.add(key == null ? "<none>" : key);
                exchange.sendResponseHeaders(204, -1);
                exchange.close();
            });
            server.start();
            return server;
        }

        @Bean
        Listeners listeners(
                Effects effects,
                JdbcTemplate jdbc,
                KafkaAdmin admin,
                KafkaTemplate<String, String> template,
                org.springframework.web.client.RestClient.Builder restClient,
                com.sun.net.httpserver.HttpServer provider) {
            jdbc.execute(
                    "CREATE TABLE IF NOT EXISTS sumi_test_effects (consumer VARCHAR(200), message_id VARCHAR(200), at TIMESTAMP)");
            jdbc.update("DELETE FROM sumi_test_effects");
            jdbc.update(
                    "DELETE FROM processed_messages WHERE consumer IN ('dup-listener', 'flaky-listener', 'poison-listener',"
                            + " 'nokey-listener', 'batch-listener', 'concurrent', 'chain-listener', 'txauto-listener', 'busy-bean')");
            return new Listeners(
                    effects,
                    jdbc,
                    admin,
                    template,
                    restClient
                            .baseUrl("http://127.0.0.1:" + provider.getAddress().getPort())
                            .build());
        }

        @Bean
        KafkaAdmin.NewTopics topics() {
            return new KafkaAdmin.NewTopics(
                    new NewTopic("dup.topic", 1, (short) 1),
                    new NewTopic("flaky.topic", 1, (short) 1),
                    new NewTopic("poison.topic", 1, (short) 1),
                    new NewTopic("poison.topic-dlt", 1, (short) 1),
                    new NewTopic("nokey.topic", 1, (short) 1),
                    new NewTopic("nokey.topic-dlt", 1, (short) 1),
                    new NewTopic("batch.topic", 1, (short) 1),
                    new NewTopic("concurrent.topic", 3, (short) 1),
                    new NewTopic("chain.topic", 1, (short) 1),
                    new NewTopic("txauto.topic", 1, (short) 1),
                    new NewTopic("chained.topic", 1, (short) 1),
                    new NewTopic("busybean.topic", 1, (short) 1),
                    new NewTopic("busybean.topic-dlt", 1, (short) 1));
        }

        @Bean
        DefaultErrorHandler errorHandler(KafkaTemplate<Object, Object> template) {
            // Sumi's starter adds its exception classification to this bean.
            return new DefaultErrorHandler(new DeadLetterPublishingRecoverer(template), new FixedBackOff(0, 2));
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
    }

    static class Listeners {

        private final Effects effects;
        private final JdbcTemplate jdbc;
        private final KafkaAdmin admin;
        private final KafkaTemplate<String, String> template;
        private final org.springframework.web.client.RestClient provider;

        Listeners(
                Effects effects,
                JdbcTemplate jdbc,
                KafkaAdmin admin,
                KafkaTemplate<String, String> template,
                org.springframework.web.client.RestClient provider) {
            this.effects = effects;
            this.jdbc = jdbc;
            this.admin = admin;
            this.template = template;
            this.provider = provider;
        }

        /** AUTO mode on a @Transactional method: the ledger row joins the method's transaction. */
        @KafkaListener(id = "txauto-listener", topics = "txauto.topic")
        @IdempotentHandler
        @org.springframework.transaction.annotation.Transactional
        public void onTransactional(String payload) {
            String key = IdempotencyContext.current().key();
            assertThat(IdempotencyContext.current().mode()).isEqualTo(IdempotencyMode.TRANSACTIONAL);
            jdbc.update(
                    "INSERT INTO sumi_test_effects (consumer, message_id, at) VALUES ('txauto', ?, CURRENT_TIMESTAMP)",
                    key);
            if (key.equals("t3") && effects.txAutoRunsOfT3.getAndIncrement() == 0) {
                throw new IllegalStateException("fails after writing its row");
            }
        }

        /** Calls a provider over HTTP and produces a follow-up record: both must carry the key, with no code here. */
        @KafkaListener(id = "chain-listener", topics = "chain.topic")
        @IdempotentHandler(mode = IdempotencyMode.LEASE)
        public void onChain(String payload) throws Exception {
            provider.post().uri("/charges").body("amount=10").retrieve().toBodilessEntity();
            template.send("chained.topic", "next", "follow-up of " + payload).get(10, TimeUnit.SECONDS);
        }

        @KafkaListener(id = "chained-reader", topics = "chained.topic", groupId = "chained-reader")
        public void onChained(ConsumerRecord<String, String> record) {
            String key = header(record, "idempotency-key");
            effects.chainedHeaders.add(key == null ? "<none>" : key);
        }

        /** Payload plus a header parameter: the key still comes from the record, through Sumi's interceptor. */
        @KafkaListener(id = "dup-listener", topics = "dup.topic")
        @IdempotentHandler(mode = IdempotencyMode.LEASE)
        public void onDuplicate(@Payload String payload, @Header(KafkaHeaders.RECEIVED_KEY) String key) {
            effects.seenKeys.add(IdempotencyContext.current().key());
            effects.effect("dup", key);
        }

        /** Every delivery, duplicate or not, passes through here before Sumi (a second listener would be a second group). */
        @KafkaListener(id = "dup-counter", topics = "dup.topic", groupId = "dup-counter")
        public void countDeliveries(String payload) {
            effects.delivered.incrementAndGet();
        }

        @KafkaListener(
                id = "flaky-listener",
                topics = "flaky.topic",
                groupId = KafkaIdempotentHandlerIntegrationTests.GROUP_FLAKY)
        @IdempotentHandler
        public void onFlaky(ConsumerRecord<String, String> record) throws Exception {
            int attempt = effects.flakyAttempts.incrementAndGet();
            assertThat(IdempotencyContext.current().attempt()).isEqualTo(attempt);
            if (attempt == 2) {
                try (AdminClient client = AdminClient.create(admin.getConfigurationProperties())) {
                    OffsetAndMetadata committed = client.listConsumerGroupOffsets(GROUP_FLAKY)
                            .partitionsToOffsetAndMetadata()
                            .get(10, TimeUnit.SECONDS)
                            .get(new TopicPartition("flaky.topic", 0));
                    effects.committedWhileFailing.set(committed == null ? -1 : committed.offset());
                }
            }
            if (attempt < 3) {
                throw new IllegalStateException("transient failure " + attempt);
            }
            effects.effect("flaky", record.key());
        }

        @KafkaListener(id = "poison-listener", topics = "poison.topic")
        @IdempotentHandler
        public void onPoison(String payload, @Header(KafkaHeaders.RECEIVED_KEY) String key) {
            effects.poisonAttempts.incrementAndGet();
            throw new IllegalStateException("poisoned payload " + key);
        }

        @KafkaListener(id = "nokey-listener", topics = "nokey.topic")
        @IdempotentHandler
        public void onNoKey(String payload) {
            effects.noKeyCalls.incrementAndGet();
        }

        @KafkaListener(id = "busy-bean", topics = "busybean.topic")
        @IdempotentHandler(mode = IdempotencyMode.LEASE)
        public void onBusyBean(ConsumerRecord<String, String> record) {
            effects.effect("busy-bean", record.key());
        }

        @KafkaListener(
                id = "dead-letters",
                topics = {"poison.topic-dlt", "nokey.topic-dlt", "busybean.topic-dlt"},
                groupId = "dead-letters")
        public void onDeadLetter(ConsumerRecord<String, String> record) {
            effects.deadLetters
                    .computeIfAbsent(record.topic(), topic -> Collections.synchronizedList(new ArrayList<>()))
                    .add(record);
        }

        @KafkaListener(
                id = "batch-listener",
                topics = "batch.topic",
                containerFactory = "batchFactory",
                autoStartup = "false")
        @IdempotentHandler(mode = IdempotencyMode.LEASE)
        public void onBatch(List<ConsumerRecord<String, String>> records) {
            effects.batchSizes.add(records.size());
            for (int i = 0; i < records.size(); i++) {
                ConsumerRecord<String, String> record = records.get(i);
                if (record.key().equals("b5") && effects.batchFailedAtIndex.compareAndSet(-1, i)) {
                    throw new BatchListenerFailedException(
                            "b5 fails once", new IllegalStateException("b5 fails once"), i);
                }
                effects.effect("batch", record.key());
            }
        }

        @KafkaListener(id = "concurrent-a", topics = "concurrent.topic", groupId = "concurrent-a", concurrency = "3")
        @IdempotentHandler(consumer = "concurrent", mode = IdempotencyMode.TRANSACTIONAL)
        public void onConcurrentA(ConsumerRecord<String, String> record) {
            effects.concurrentDeliveries.incrementAndGet();
            jdbc.update(
                    "INSERT INTO sumi_test_effects (consumer, message_id, at) VALUES ('concurrent', ?, CURRENT_TIMESTAMP)",
                    IdempotencyContext.current().key());
        }

        @KafkaListener(id = "concurrent-b", topics = "concurrent.topic", groupId = "concurrent-b", concurrency = "3")
        @IdempotentHandler(consumer = "concurrent", mode = IdempotencyMode.TRANSACTIONAL)
        public void onConcurrentB(ConsumerRecord<String, String> record) {
            effects.concurrentDeliveries.incrementAndGet();
            jdbc.update(
                    "INSERT INTO sumi_test_effects (consumer, message_id, at) VALUES ('concurrent', ?, CURRENT_TIMESTAMP)",
                    IdempotencyContext.current().key());
        }
    }
}
