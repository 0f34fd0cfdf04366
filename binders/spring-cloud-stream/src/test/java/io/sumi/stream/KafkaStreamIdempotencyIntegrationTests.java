package io.sumi.stream;

import static io.sumi.stream.Effects.header;
import static io.sumi.stream.Effects.payload;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.sumi.consumer.IdempotencyContext;
import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentHandler;
import io.sumi.consumer.exception.MissingIdempotencyKeyException;
import io.sumi.store.ClaimOutcome;
import io.sumi.store.ClaimRequest;
import io.sumi.store.MessageStatus;
import io.sumi.testing.TestDatabase;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.function.Function;
import org.apache.kafka.clients.admin.AdminClient;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.cloud.stream.binding.BindingsLifecycleController;
import org.springframework.cloud.stream.function.StreamBridge;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.core.DefaultKafkaProducerFactory;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.listener.BatchListenerFailedException;
import org.springframework.kafka.test.EmbeddedKafkaBroker;
import org.springframework.kafka.test.context.EmbeddedKafka;
import org.springframework.kafka.test.utils.KafkaTestUtils;
import org.springframework.messaging.Message;
import org.springframework.messaging.support.MessageBuilder;
import org.springframework.test.context.ActiveProfiles;

/**
 * {@code @IdempotentHandler} functional beans on Spring Cloud Stream's Kafka binder, against an
 * in-process KRaft broker and the local PostgreSQL. One context serves every test (bindings in
 * {@code application-kafkatest.properties}); keys carry a per-run prefix, so rows left in the
 * ledger by earlier runs never collide.
 */
@SpringBootTest(classes = KafkaStreamIdempotencyIntegrationTests.App.class)
@ActiveProfiles("kafkatest")
@EmbeddedKafka(partitions = 4, topics = "concurrent.topic")
class KafkaStreamIdempotencyIntegrationTests extends StreamIdempotencyTestBase {

    static final String RUN = UUID.randomUUID().toString().substring(0, 8);

    KafkaStreamIdempotencyIntegrationTests() {
        super(RUN);
    }

    static ConfigurableApplicationContext secondInstance;

    static JdbcTemplate database;

    @AfterAll
    static void cleanUp() {
        if (secondInstance != null) {
            secondInstance.close();
        }
        if (database != null) {
            deleteRows(database, RUN);
        }
    }

    @Autowired
    void remember(JdbcTemplate jdbcTemplate) {
        database = jdbcTemplate;
    }

    @Autowired
    EmbeddedKafkaBroker broker;

    @Autowired
    BindingsLifecycleController bindings;

    KafkaTemplate<String, String> template() {
        Map<String, Object> props = KafkaTestUtils.producerProps(broker);
        return new KafkaTemplate<>(
                new DefaultKafkaProducerFactory<>(props, new StringSerializer(), new StringSerializer()));
    }

    static ProducerRecord<String, String> record(String topic, String key, String payload) {
        ProducerRecord<String, String> record = new ProducerRecord<>(topic, key, payload);
        record.headers().add("outbox-id", key.getBytes(StandardCharsets.UTF_8));
        return record;
    }

    void send(List<ProducerRecord<String, String>> records) {
        KafkaTemplate<String, String> template = template();
        records.forEach(template::send);
        template.flush();
        template.getProducerFactory().reset();
    }

    @Test
    void duplicatesRunTheFunctionOnce() {
        List<ProducerRecord<String, String>> records = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            for (int copy = 0; copy < 3; copy++) {
                records.add(record("dup.topic", RUN + "-dup-" + i, "payload-" + i));
            }
        }
        send(records);

        await().atMost(Duration.ofSeconds(30)).until(() -> count("dup", "processed") + count("dup", "duplicate") == 60);
        for (int i = 0; i < 20; i++) {
            assertThat(effects.count("dup:" + RUN + "-dup-" + i))
                    .as("effects of key %d", i)
                    .isEqualTo(1);
        }
        assertThat(count("dup", "duplicate")).isEqualTo(40);
        assertThat(store.find("dup", RUN + "-dup-7"))
                .get()
                .extracting(row -> row.status())
                .isEqualTo(MessageStatus.COMPLETED);
    }

    @Test
    void aPayloadOnlyFunctionThatThrowsThenSucceedsIsProcessedOnceAfterTheBinderRetries() {
        String key = RUN + "-flaky";
        send(List.of(record("flaky.topic", key, "flaky payload")));

        // The effect is counted inside the function, the ledger row completed just after it returns.
        await().atMost(Duration.ofSeconds(30))
                .until(() -> effects.count("flaky:" + key) == 1
                        && store.find("flaky", key)
                                .map(row -> row.status() == MessageStatus.COMPLETED)
                                .orElse(false));
        assertThat(effects.count("flaky-attempts:" + key)).isEqualTo(3);
        assertThat(store.find("flaky", key)).get().satisfies(row -> {
            assertThat(row.status()).isEqualTo(MessageStatus.COMPLETED);
            assertThat(row.attempts()).isEqualTo(3);
        });
    }

    @Test
    void aPoisonMessageGoesToTheDlqAfterTheConfiguredAttemptsAndTheLedgerNeverSaysDone() {
        String key = RUN + "-poison";
        send(List.of(record("poison.topic", key, "poison payload")));

        await().atMost(Duration.ofSeconds(30)).until(() -> dlq("poison.dlq", key) != null);
        Message<?> dead = dlq("poison.dlq", key);
        assertThat(header(dead, "x-exception-message")).contains("poisoned payload " + key);
        assertThat(header(dead, "x-original-topic")).isEqualTo("poison.topic");
        assertThat(payload(dead)).isEqualTo("poison payload");
        assertThat(effects.count("poison-attempts:" + key)).isEqualTo(3);
        assertThat(store.find("poison", key)).get().satisfies(row -> {
            assertThat(row.status()).isEqualTo(MessageStatus.IN_PROGRESS);
            assertThat(row.lastError()).contains("poisoned payload");
        });
    }

    @Test
    void aMessageWithoutAKeyGoesToTheDlqAtOnceWithAClearError() {
        String marker = RUN + "-no key here";
        send(List.of(new ProducerRecord<>("nokey.topic", "k", marker)));

        await().atMost(Duration.ofSeconds(30))
                .until(() -> effects.received("nokey.dlq").stream()
                        .anyMatch(m -> payload(m).equals(marker)));
        Message<?> dead = effects.received("nokey.dlq").stream()
                .filter(m -> payload(m).equals(marker))
                .findFirst()
                .orElseThrow();
        assertThat(header(dead, "x-exception-message"))
                .contains("No idempotency key")
                .contains("outbox-id");
        assertThat(header(dead, "x-exception-stacktrace")).contains(MissingIdempotencyKeyException.class.getName());
        assertThat(effects.count("nokey-calls")).isZero();
        // Not retried: the binder's retry classifies it as not retryable.
        assertThat(count("noKey", "rejected")).isEqualTo(1);
    }

    @Test
    void aFunctionsOutputCarriesTheKeyAndADuplicateProducesNoOutput() {
        String key = RUN + "-enrich";
        // No key header: the key comes from the function's key expression, and still travels on.
        send(List.of(
                new ProducerRecord<>("enrich.topic", key + ":hello"),
                new ProducerRecord<>("enrich.topic", key + ":hello"),
                new ProducerRecord<>("enrich.topic", key + "-last:bye")));

        await().atMost(Duration.ofSeconds(30))
                .until(() -> outputs("enrich.out", key + "-last").size() == 1);
        List<Message<?>> outputs = outputs("enrich.out", key + ":");
        assertThat(outputs).hasSize(1);
        assertThat(payload(outputs.get(0))).isEqualTo((key + ":hello").toUpperCase());
        assertThat(header(outputs.get(0), "idempotency-key")).isEqualTo(key);
        assertThat(count("enrich", "duplicate")).isGreaterThanOrEqualTo(1);
    }

    /**
     * storeReply (docs/replies.md): the function runs once, and the duplicate's output is the kept
     * one, read back as the declared output type (a record, kept as JSON), with the duplicate's own
     * headers. Transactional mode: the reply is written in the transaction that completes the row.
     * The negative control is {@link #aFunctionsOutputCarriesTheKeyAndADuplicateProducesNoOutput}:
     * the same duplicate, without storeReply, produces no output.
     */
    @Test
    void aFunctionThatKeepsItsRepliesRunsOnceAndADuplicateGetsTheSameOutput() {
        String key = RUN + "-quote";
        ProducerRecord<String, String> first = record("quote.topic", key, "tea");
        first.headers().add("request-id", "r1".getBytes(StandardCharsets.UTF_8));
        ProducerRecord<String, String> second = record("quote.topic", key, "tea");
        second.headers().add("request-id", "r2".getBytes(StandardCharsets.UTF_8));
        send(List.of(first, second));

        await().atMost(Duration.ofSeconds(30))
                .until(() -> keyed("quote.out", key).size() == 2);
        List<Message<?>> outputs = keyed("quote.out", key);
        assertThat(effects.count("quote:" + key)).isEqualTo(1);
        assertThat(count("quote", "duplicate")).isEqualTo(1);
        // Equal outputs: a second run would have priced the quote differently.
        assertThat(payload(outputs.get(1))).isEqualTo(payload(outputs.get(0))).contains("\"item\":\"tea\"");
        assertThat(outputs).extracting(m -> header(m, "request-id")).containsExactlyInAnyOrder("r1", "r2");
        assertThat(store.findReply("quote", key))
                .get()
                .satisfies(reply -> assertThat(reply.header("sumi-reply-kind")).isEqualTo("converted"));
    }

    /**
     * The same in lease mode, for a function that returns a Message: its own header is kept too,
     * and neither output gets the input's headers (documented in spring-cloud-stream.md).
     */
    @Test
    void aMessageFunctionThatKeepsItsRepliesInLeaseModeSendsTheKeptMessageForADuplicate() {
        String key = RUN + "-quote-message";
        ProducerRecord<String, String> first = record("quoteMessage.topic", key, "tea");
        first.headers().add("request-id", "r1".getBytes(StandardCharsets.UTF_8));
        ProducerRecord<String, String> second = record("quoteMessage.topic", key, "tea");
        second.headers().add("request-id", "r2".getBytes(StandardCharsets.UTF_8));
        send(List.of(first, second));

        await().atMost(Duration.ofSeconds(30))
                .until(() -> keyed("quoteMessage.out", key).size() == 2);
        List<Message<?>> outputs = keyed("quoteMessage.out", key);
        assertThat(effects.count("quoteMessage:" + key)).isEqualTo(1);
        assertThat(payload(outputs.get(1))).isEqualTo(payload(outputs.get(0))).startsWith("TEA#");
        assertThat(outputs).extracting(m -> header(m, "quote-kind")).containsExactly("message", "message");
        // Spring Cloud Stream copies no input header to a Message output, the first run's as the duplicate's.
        assertThat(outputs).extracting(m -> header(m, "request-id")).containsOnlyNulls();
    }

    List<Message<?>> keyed(String topic, String key) {
        return effects.received(topic).stream()
                .filter(m -> key.equals(header(m, "idempotency-key")))
                .toList();
    }

    @Test
    void messagesSentWithStreamBridgeInsideTheFunctionCarryTheKeyUnlessTheySetTheirOwn() {
        String key = RUN + "-relay";
        send(List.of(record("relay.topic", key, "relay me")));

        await().atMost(Duration.ofSeconds(30))
                .until(() -> outputs("relay.out", "relay me").size() == 2);
        List<Message<?>> outputs = outputs("relay.out", "relay me");
        assertThat(outputs).extracting(m -> header(m, "idempotency-key")).containsExactlyInAnyOrder(key, key + "/own");
    }

    @Test
    void twoInstancesInOneGroupReceivingTheSameKeysConcurrentlyWriteEachEffectOnce() {
        // Command-line arguments: they override the profile's function definition (default properties would not).
        String[] database = TestDatabase.POSTGRESQL.settings();
        secondInstance = new SpringApplicationBuilder(App.class)
                .profiles("kafkatest")
                .run(
                        "--spring.cloud.function.definition=concurrent",
                        "--spring.embedded.kafka.brokers=" + broker.getBrokersAsString(),
                        "--spring.datasource.url=" + database[0],
                        "--spring.datasource.username=" + database[1],
                        "--spring.datasource.password=" + database[2]);
        // Wait for the group to settle: four consumers (two per instance), a partition each.
        await().atMost(Duration.ofSeconds(60)).until(() -> membersWithPartitions("concurrent") == 4);
        List<ProducerRecord<String, String>> records = new ArrayList<>();
        for (int i = 0; i < 100; i++) {
            String key = RUN + "-c" + i;
            // Each key twice, on two partitions, which the group's four consumers share.
            records.add(withOutboxId(new ProducerRecord<>("concurrent.topic", i % 4, key, "v" + i), key));
            records.add(withOutboxId(new ProducerRecord<>("concurrent.topic", (i + 1) % 4, key, "v" + i), key));
        }
        send(records);

        await().atMost(Duration.ofSeconds(60))
                .until(() -> effectRows("concurrent").size() == 100
                        && store.find("concurrent", RUN + "-c99").isPresent());
        assertThat(effectRows("concurrent"))
                .allSatisfy(
                        row -> assertThat(((Number) row.get("n")).intValue()).isEqualTo(1));
        await().atMost(Duration.ofSeconds(30))
                .until(() -> jdbc.queryForObject(
                                "SELECT COUNT(*) FROM processed_messages WHERE consumer = 'concurrent' AND message_id LIKE ? AND status = 'COMPLETED'",
                                Integer.class,
                                RUN + "-c%")
                        == 100);
        assertThat(effectRows("concurrent")).hasSize(100);
        // Both instances took part.
        assertThat(deliveries(meters, "concurrent")).isPositive();
        assertThat(deliveries(secondInstance.getBean(MeterRegistry.class), "concurrent"))
                .isPositive();
    }

    long membersWithPartitions(String group) throws Exception {
        try (AdminClient client =
                AdminClient.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, broker.getBrokersAsString()))) {
            ConsumerGroupDescription description = client.describeConsumerGroups(List.of(group))
                    .describedGroups()
                    .get(group)
                    .get(10, TimeUnit.SECONDS);
            return description.members().stream()
                    .filter(member -> !member.assignment().topicPartitions().isEmpty())
                    .count();
        }
    }

    static double deliveries(MeterRegistry registry, String consumer) {
        return registry.find("sumi.messages").tag("consumer", consumer).counters().stream()
                .mapToDouble(Counter::count)
                .sum();
    }

    @Test
    void aBatchConsumerClaimsEachBatchInOneRoundTripAndRedeliversFromAFailedRecord() {
        List<ProducerRecord<String, String>> records = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            records.add(record("batch.topic", RUN + "-b" + i, "v" + i));
        }
        records.add(4, record("batch.topic", RUN + "-b2", "v2")); // a duplicate inside the batch
        send(records);
        bindings.changeState("batch-in-0", BindingsLifecycleController.State.STARTED);

        await().atMost(Duration.ofSeconds(30)).until(() -> {
            for (int i = 0; i < 10; i++) {
                if (effects.count("batch:v" + i) != 1) {
                    return false;
                }
            }
            return true;
        });
        for (int i = 0; i < 10; i++) {
            assertThat(effects.count("batch:v" + i)).as("v%d", i).isEqualTo(1);
        }
        assertThat(effects.count("batch-failed")).isEqualTo(1);
        // The first delivery: 11 records in one claim, the duplicate filtered out of the function's list.
        assertThat(store.claims("batch").get(0)).isEqualTo(11);
        assertThat(effects.received("batch-sizes").get(0).getPayload()).isEqualTo(10);
        // The redelivery started at the failed record: one claim for the 5 records from b5 on.
        assertThat(store.claims("batch")).hasSize(2);
        assertThat(store.claims("batch").get(1)).isEqualTo(5);
        assertThat(store.find("batch", RUN + "-b5"))
                .get()
                .extracting(row -> row.attempts())
                .isEqualTo(2);
        assertThat(store.find("batch", RUN + "-b4"))
                .get()
                .extracting(row -> row.attempts())
                .isEqualTo(1);
    }

    /**
     * Issue 8: instance A claimed the key (lease mode) and died; instance B's binding, with the
     * binder's defaults (retry, no DLQ), sees BUSY longer than {@code busy-max-wait}. The record
     * must wait for the lease to end and then run once: before, the binder's retries gave up and
     * its container's error handler logged and committed past it, so the key never ran.
     */
    @Test
    void aKeyHeldByADeadInstanceWaitsForItsLeaseAndRunsOnceOnTheKafkaBinderWithoutDlq() {
        String key = RUN + "-busy";
        // Instance A claimed it and was killed: its lease (8 s) outlasts the in-place wait (1 s) of each of the
        // binder's 3 attempts, so only the container can still deliver it.
        assertThat(store.claim("busy", new ClaimRequest(key, null), Duration.ofSeconds(8))
                        .outcome())
                .isEqualTo(ClaimOutcome.CLAIMED);
        send(List.of(record("busy.topic", key, "busy payload")));

        await().atMost(Duration.ofSeconds(30))
                .until(() -> effects.count("busy:" + key) == 1
                        && store.find("busy", key)
                                .map(row -> row.status() == MessageStatus.COMPLETED)
                                .orElse(false));
        assertThat(count("busy", "busy"))
                .as("the busy key was seen busy before it ran")
                .isPositive();
        assertThat(effects.count("busy:" + key)).isEqualTo(1);
    }

    static ProducerRecord<String, String> withOutboxId(ProducerRecord<String, String> record, String key) {
        record.headers().add("outbox-id", key.getBytes(StandardCharsets.UTF_8));
        return record;
    }

    Message<?> dlq(String topic, String key) {
        return effects.received(topic).stream()
                .filter(m -> key.equals(header(m, "outbox-id")))
                .findFirst()
                .orElse(null);
    }

    List<Message<?>> outputs(String topic, String payloadPrefix) {
        return effects.received(topic).stream()
                .filter(m -> payload(m).toUpperCase().startsWith(payloadPrefix.toUpperCase()))
                .toList();
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import({SumiStreamTestConfiguration.class, StreamTestFunctions.class})
    static class App {

        @Bean
        @IdempotentHandler(mode = IdempotencyMode.LEASE)
        Consumer<Message<String>> dup(Effects effects) {
            return message ->
                    effects.effect("dup:" + IdempotencyContext.current().key());
        }

        @Bean
        @IdempotentHandler
        Consumer<String> poison(Effects effects) {
            return payload -> {
                String key = IdempotencyContext.current().key();
                effects.effect("poison-attempts:" + key);
                throw new IllegalStateException("poisoned payload " + key);
            };
        }

        @Bean
        @IdempotentHandler(key = "#payload.split(':')[0]")
        Function<String, String> enrich() {
            return String::toUpperCase;
        }

        record Quote(String item, int price) {}

        @Bean
        @IdempotentHandler(mode = IdempotencyMode.TRANSACTIONAL, storeReply = true)
        Function<String, Quote> quote(Effects effects) {
            AtomicInteger runs = new AtomicInteger();
            return item -> {
                effects.effect("quote:" + IdempotencyContext.current().key());
                return new Quote(item, 100 + runs.incrementAndGet());
            };
        }

        @Bean
        @IdempotentHandler(mode = IdempotencyMode.LEASE, storeReply = true)
        Function<Message<String>, Message<String>> quoteMessage(Effects effects) {
            AtomicInteger runs = new AtomicInteger();
            return message -> {
                effects.effect("quoteMessage:" + IdempotencyContext.current().key());
                return MessageBuilder.withPayload(message.getPayload().toUpperCase() + "#" + runs.incrementAndGet())
                        .setHeader("quote-kind", "message")
                        .build();
            };
        }

        @Bean
        @IdempotentHandler
        Consumer<Message<String>> relay(StreamBridge bridge) {
            return message -> {
                bridge.send("relay.out", message.getPayload());
                bridge.send(
                        "relay.out",
                        MessageBuilder.withPayload(message.getPayload())
                                .setHeader(
                                        "idempotency-key",
                                        IdempotencyContext.current().key() + "/own")
                                .build());
            };
        }

        @Bean
        @IdempotentHandler(mode = IdempotencyMode.TRANSACTIONAL)
        Consumer<String> concurrent(JdbcTemplate jdbc) {
            return payload -> jdbc.update(
                    "INSERT INTO sumi_stream_effects (consumer, message_id) VALUES ('concurrent', ?)",
                    IdempotencyContext.current().key());
        }

        @Bean
        @IdempotentHandler(mode = IdempotencyMode.LEASE)
        Consumer<List<String>> batch(Effects effects) {
            AtomicBoolean failed = new AtomicBoolean();
            return payloads -> {
                effects.receive(
                        "batch-sizes",
                        MessageBuilder.withPayload(payloads.size()).build());
                for (int i = 0; i < payloads.size(); i++) {
                    if (payloads.get(i).equals("v5") && failed.compareAndSet(false, true)) {
                        effects.effect("batch-failed");
                        throw new BatchListenerFailedException(
                                "v5 fails once", new IllegalStateException("v5 fails once"), i);
                    }
                    effects.effect("batch:" + payloads.get(i));
                }
            };
        }

        @Bean
        @IdempotentHandler(mode = IdempotencyMode.LEASE)
        Consumer<Message<String>> busy(Effects effects) {
            return message ->
                    effects.effect("busy:" + IdempotencyContext.current().key());
        }

        /** Not idempotent: sees the DLQs and the output topics. */
        @Bean
        Consumer<Message<byte[]>> observer(Effects effects) {
            return message -> effects.receive(String.valueOf(header(message, "kafka_receivedTopic")), message);
        }
    }
}
