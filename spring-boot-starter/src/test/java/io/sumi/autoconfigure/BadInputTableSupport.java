package io.sumi.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sumi.consumer.FingerprintMismatchPolicy;
import io.sumi.consumer.Fingerprints;
import io.sumi.consumer.IdempotencyContext;
import io.sumi.consumer.IdempotentHandler;
import io.sumi.consumer.exception.FingerprintMismatchException;
import io.sumi.consumer.exception.IdempotencyException;
import io.sumi.consumer.exception.InvalidIdempotencyKeyException;
import io.sumi.consumer.exception.MissingIdempotencyKeyException;
import io.sumi.testing.TestDatabase;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.kafka.clients.admin.AdminClient;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.kafka.autoconfigure.ConcurrentKafkaListenerContainerFactoryConfigurer;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.config.ConcurrentKafkaListenerContainerFactory;
import org.springframework.kafka.core.DefaultKafkaConsumerFactory;
import org.springframework.kafka.core.KafkaAdmin;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.support.KafkaHeaders;
import org.springframework.kafka.support.serializer.DeserializationException;
import org.springframework.kafka.support.serializer.ErrorHandlingDeserializer;
import org.springframework.kafka.support.serializer.JacksonJsonDeserializer;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The bad-input table of issue 8 (and of {@code docs/bad-input.md}), run through a real Kafka path
 * as an application sees it: an in-process broker, a Spring Boot application with the starter,
 * one {@code @IdempotentHandler @KafkaListener} per row on a topic of its own, PostgreSQL as the
 * ledger. Each row sends a well-formed record, the bad record(s), and another well-formed record
 * to one partition, and checks three things:
 * <ol>
 *   <li>what the user sees: the exception class and a message that names the problem and the remedy
 *   (in the dead-letter record's headers, or in the log when no dead-letter topic is configured);</li>
 *   <li>where the bad record goes;</li>
 *   <li>that nothing else is lost: the well-formed records before and after it are processed
 *   exactly once, the group's offset moves past all of them, and the ledger holds no
 *   {@code COMPLETED} row that the bad record did not earn.</li>
 * </ol>
 * Subclasses differ only in the error handler: a {@code DefaultErrorHandler} bean with a
 * {@code DeadLetterPublishingRecoverer}, or none at all (Spring Kafka's default).
 */
abstract class BadInputTableSupport {

    /** The rows' listeners, each named {@code bad-<row>} and reading {@code bad.<row>}. */
    static final List<String> ROWS =
            List.of("nokey", "empty", "long", "utf8", "nul", "space", "fp-reject", "fp-default", "json");

    @DynamicPropertySource
    static void database(DynamicPropertyRegistry registry) {
        String[] settings = TestDatabase.POSTGRESQL.settings();
        registry.add("spring.datasource.url", () -> settings[0]);
        registry.add("spring.datasource.username", () -> settings[1]);
        registry.add("spring.datasource.password", () -> settings[2]);
    }

    @Autowired
    KafkaTemplate<String, String> template;

    @Autowired
    Effects effects;

    @Autowired
    JdbcTemplate jdbc;

    @Autowired
    MeterRegistry meters;

    @Autowired
    KafkaAdmin admin;

    /** Where a bad record ends up. */
    enum Goes {
        /** Published to {@code <topic>-dlt} with Spring Kafka's exception headers, at once (not retried); offset committed. */
        DEAD_LETTER_TOPIC,
        /** Spring Kafka's default recoverer logs it at ERROR with the exception, at once (not retried); offset committed. */
        LOGGED_AND_SKIPPED,
        /** Processed normally, as a key of its own. */
        PROCESSED,
        /** Acknowledged as a duplicate of the first message with its key, counted, logged; the handler does not run. */
        ACKED_AS_DUPLICATE
    }

    /**
     * One record of a row.
     *
     * @param key the {@code outbox-id} header's bytes; {@code null}: no key header at all
     * @param runs whether the handler must run for it (a key of its own that is fine)
     */
    record Sent(byte @Nullable [] key, String payload, boolean runs) {

        static Sent rejected(@Nullable String key, String payload) {
            return new Sent(key == null ? null : key.getBytes(StandardCharsets.UTF_8), payload, false);
        }

        static Sent rejected(byte[] key, String payload) {
            return new Sent(key, payload, false);
        }

        static Sent runs(String key, String payload) {
            return new Sent(key.getBytes(StandardCharsets.UTF_8), payload, true);
        }

        @Nullable
        String text() {
            return key == null ? null : new String(key, StandardCharsets.UTF_8);
        }
    }

    /**
     * What the user must see for the records that do not run.
     *
     * @param error the exception's class (the dead-letter record's exception or cause class)
     * @param says fragments the message must contain; {@code "a|b"} means either
     */
    record Expected(Goes goes, @Nullable Class<? extends Throwable> error, List<String> says) {

        static Expected processed() {
            return new Expected(Goes.PROCESSED, null, List.of());
        }
    }

    /**
     * One row of the table.
     *
     * @param input what is wrong with the input, as the test's name shows it
     * @param row the row's listener and topic suffix (one of {@link #ROWS})
     * @param bad the records sent between the two well-formed ones
     */
    record Row(String input, String row, List<Sent> bad, Expected expected) {

        @Override
        public String toString() {
            return input + " -> " + expected.goes()
                    + (expected.error() == null ? "" : " (" + expected.error().getSimpleName() + ")");
        }
    }

    /** Keys of this table's records start with it, so the two tables never share a ledger row. */
    abstract String variant();

    /** The suffix of this table's topics and consumer groups, the one its listeners are named with. */
    @Value("${sumi.test.topic-suffix}")
    String topicSuffix;

    String variantKey(String row, String suffix) {
        return variant() + "-" + row + "-" + suffix;
    }

    void check(Row row, CapturedOutput output) throws Exception {
        // The ledger's consumer is the same in both tables; the topic and the group are the table's
        // own, on the suite's one broker (the other table's context, cached, keeps its containers).
        String topic = "bad." + row.row() + topicSuffix;
        String consumer = "bad-" + row.row();
        String group = consumer + topicSuffix;
        String before = variantKey(row.row(), "before");
        String after = variantKey(row.row(), "after");
        String goodPayload = row.row().equals("json") ? "{\"id\":\"good\",\"amount\":1}" : "a well-formed payload";

        List<ProducerRecord<String, String>> records = new ArrayList<>();
        records.add(record(topic, before.getBytes(StandardCharsets.UTF_8), goodPayload));
        for (Sent sent : row.bad()) {
            records.add(record(topic, sent.key(), sent.payload()));
        }
        records.add(record(topic, after.getBytes(StandardCharsets.UTF_8), goodPayload));
        List<Long> offsets = new ArrayList<>();
        for (ProducerRecord<String, String> record : records) {
            offsets.add(template.send(record)
                    .get(10, TimeUnit.SECONDS)
                    .getRecordMetadata()
                    .offset());
        }
        long end = offsets.get(offsets.size() - 1) + 1;
        List<Long> badOffsets = new ArrayList<>();
        List<Sent> notRun = new ArrayList<>();
        for (int i = 0; i < row.bad().size(); i++) {
            if (!row.bad().get(i).runs()) {
                badOffsets.add(offsets.get(i + 1));
                notRun.add(row.bad().get(i));
            }
        }

        // The group moves past every record: nothing is stuck behind the bad one.
        await().atMost(Duration.ofSeconds(45))
                .untilAsserted(() -> assertThat(committedOffset(group, topic))
                        .as("committed offset of group %s", group)
                        .isEqualTo(end));

        Expected expected = row.expected();
        // Sumi's own refusals happen once: not retried, not counted toward a back-off.
        boolean sumiRefuses = expected.error() != null && IdempotencyException.class.isAssignableFrom(expected.error());
        assertThat(count(consumer, "rejected"))
                .as("Sumi refused the bad record(s) once each, without retries (outcomes: %s)", outcomes(consumer))
                .isEqualTo(sumiRefuses ? notRun.size() : 0);

        // Where the bad record went, and what the user sees.
        switch (expected.goes()) {
            case DEAD_LETTER_TOPIC -> {
                await().atMost(Duration.ofSeconds(30))
                        .untilAsserted(() -> assertThat(effects.deadLetters(topic + "-dlt"))
                                .as("dead letters of " + topic)
                                .hasSize(notRun.size()));
                List<ConsumerRecord<String, String>> dead = effects.deadLetters(topic + "-dlt");
                for (int i = 0; i < dead.size(); i++) {
                    ConsumerRecord<String, String> letter = dead.get(i);
                    assertThat(Long.valueOf(header(letter, KafkaHeaders.DLT_ORIGINAL_OFFSET, true)))
                            .as("the dead letter is the bad record")
                            .isEqualTo(badOffsets.get(i));
                    assertThat(letter.value()).isEqualTo(notRun.get(i).payload());
                    assertThat(List.of(
                                    String.valueOf(header(letter, KafkaHeaders.DLT_EXCEPTION_FQCN, false)),
                                    String.valueOf(header(letter, KafkaHeaders.DLT_EXCEPTION_CAUSE_FQCN, false))))
                            .as("exception classes on the dead letter")
                            .contains(expected.error().getName());
                    assertSays(header(letter, KafkaHeaders.DLT_EXCEPTION_MESSAGE, false), expected.says());
                }
            }
            case LOGGED_AND_SKIPPED -> {
                for (Long offset : badOffsets) {
                    String marker = "exhausted for " + topic + "-0@" + offset;
                    await().atMost(Duration.ofSeconds(10))
                            .untilAsserted(() -> assertThat(output.getAll()).contains(marker));
                    // The log entry of that record: its line, the exception and its causes.
                    String all = output.getAll();
                    int start = all.lastIndexOf('\n', all.indexOf(marker)) + 1;
                    String entry = all.substring(start, Math.min(all.length(), all.indexOf(marker) + 4000));
                    assertThat(entry)
                            .as("the ERROR log entry of the skipped record")
                            .contains("ERROR")
                            .contains(expected.error().getName());
                    assertSays(
                            entry.lines()
                                    .filter(line -> !line.startsWith("\tat "))
                                    .collect(Collectors.joining("\n")),
                            expected.says());
                }
            }
            case ACKED_AS_DUPLICATE -> {
                assertThat(count(consumer, "duplicate"))
                        .as("acknowledged as duplicates")
                        .isEqualTo(notRun.size());
                assertThat(meters.get("sumi.fingerprint.mismatches")
                                .tag("consumer", consumer)
                                .counter()
                                .count())
                        .as("counted as a fingerprint mismatch")
                        .isEqualTo(notRun.size());
                String warnings = output.getAll()
                        .lines()
                        .filter(line -> line.contains("WARN") && line.contains("'" + consumer + "'"))
                        .collect(Collectors.joining("\n"));
                assertSays(warnings, expected.says());
            }
            case PROCESSED ->
                assertThat(notRun).as("every record of a PROCESSED row runs").isEmpty();
        }
        if (expected.error() == FingerprintMismatchException.class) {
            assertThat(meters.get("sumi.fingerprint.mismatches")
                            .tag("consumer", consumer)
                            .counter()
                            .count())
                    .as("counted as a fingerprint mismatch")
                    .isEqualTo(notRun.size());
        }
        if (expected.goes() != Goes.DEAD_LETTER_TOPIC) {
            assertThat(effects.deadLetters(topic + "-dlt"))
                    .as("nothing of " + topic + " dead-lettered")
                    .isEmpty();
        }

        // Nothing else lost, nothing doubled: each record that should run ran exactly once.
        Map<String, Integer> expectedRuns = new LinkedHashMap<>();
        expectedRuns.put(before, 1);
        List<Sent> running = row.bad().stream().filter(Sent::runs).toList();
        for (Sent sent : running) {
            expectedRuns.merge(sent.text(), 1, Integer::sum);
        }
        expectedRuns.put(after, 1);
        assertThat(effects.runs(consumer))
                .as("handler runs per key of " + consumer)
                .isEqualTo(expectedRuns);
        for (Sent sent : running) {
            assertThat(effects.payloads(consumer, sent.text())).containsExactly(sent.payload());
        }

        // The ledger: the runs above COMPLETED, nothing for the refused records (not a truncated or mangled key
        // either).
        Map<String, String> ledger = new HashMap<>();
        Map<String, String> fingerprints = new HashMap<>();
        jdbc.query(
                "SELECT message_id, status, fingerprint FROM processed_messages WHERE consumer = ?",
                rs -> {
                    ledger.put(rs.getString(1), rs.getString(2));
                    fingerprints.put(rs.getString(1), rs.getString(3));
                },
                consumer);
        Map<String, String> expectedLedger =
                expectedRuns.keySet().stream().collect(Collectors.toMap(key -> key, key -> "COMPLETED"));
        assertThat(ledger).as("ledger rows of " + consumer).isEqualTo(expectedLedger);
        for (Sent sent : running) {
            assertThat(fingerprints.get(sent.text()))
                    .as("the ledger remembers the payload that ran")
                    .isEqualTo(Fingerprints.of(sent.payload()));
        }
    }

    static void assertSays(@Nullable String text, List<String> fragments) {
        assertThat(text).as("what the user reads").isNotNull();
        for (String fragment : fragments) {
            List<String> alternatives = Arrays.asList(fragment.split("\\|"));
            assertThat(alternatives)
                    .as("the message should say one of %s; it says: %s", alternatives, text)
                    .anyMatch(text::contains);
        }
    }

    static ProducerRecord<String, String> record(String topic, byte @Nullable [] key, String payload) {
        ProducerRecord<String, String> record = new ProducerRecord<>(topic, 0, "k", payload);
        if (key != null) {
            record.headers().add("outbox-id", key);
        }
        return record;
    }

    double count(String consumer, String outcome) {
        Counter counter = meters.find("sumi.messages")
                .tag("consumer", consumer)
                .tag("outcome", outcome)
                .counter();
        return counter == null ? 0 : counter.count();
    }

    Map<String, Double> outcomes(String consumer) {
        Map<String, Double> outcomes = new java.util.TreeMap<>();
        meters.find("sumi.messages")
                .tag("consumer", consumer)
                .counters()
                .forEach(counter -> outcomes.put(counter.getId().getTag("outcome"), counter.count()));
        return outcomes;
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

    static @Nullable String header(ConsumerRecord<?, ?> record, String name, boolean binaryLong) {
        org.apache.kafka.common.header.Header header = record.headers().lastHeader(name);
        if (header == null) {
            return null;
        }
        if (binaryLong && header.value().length == Long.BYTES) {
            return String.valueOf(java.nio.ByteBuffer.wrap(header.value()).getLong());
        }
        return new String(header.value(), StandardCharsets.UTF_8);
    }

    /** What the listeners ran, per consumer and key, and the dead letters read back. */
    static class Effects {
        private final Map<String, Map<String, List<String>>> runs = new ConcurrentHashMap<>();
        private final Map<String, List<ConsumerRecord<String, String>>> deadLetters = new ConcurrentHashMap<>();

        void ran(String consumer, String payload) {
            String key = IdempotencyContext.current().key();
            runs.computeIfAbsent(consumer, c -> new ConcurrentHashMap<>())
                    .computeIfAbsent(key, k -> Collections.synchronizedList(new ArrayList<>()))
                    .add(payload);
        }

        Map<String, Integer> runs(String consumer) {
            Map<String, Integer> counts = new LinkedHashMap<>();
            runs.getOrDefault(consumer, Map.of()).forEach((key, payloads) -> counts.put(key, payloads.size()));
            return counts;
        }

        List<String> payloads(String consumer, @Nullable String key) {
            return runs.getOrDefault(consumer, Map.of()).getOrDefault(key, List.of());
        }

        List<ConsumerRecord<String, String>> deadLetters(String topic) {
            return List.copyOf(deadLetters.getOrDefault(topic, List.of()));
        }

        void deadLetter(ConsumerRecord<String, String> record) {
            deadLetters
                    .computeIfAbsent(record.topic(), t -> Collections.synchronizedList(new ArrayList<>()))
                    .add(record);
        }
    }

    /** A JSON payload for the {@code json} row. */
    record Order(String id, int amount) {}

    /** What both tables' applications share: the listeners, their topics, a JSON container factory. */
    @Configuration(proxyBeanMethods = false)
    static class Common {

        @Bean
        MeterRegistry meterRegistry() {
            return new SimpleMeterRegistry();
        }

        @Bean
        Effects effects(JdbcTemplate jdbc) {
            jdbc.update("DELETE FROM processed_messages WHERE consumer LIKE 'bad-%'");
            return new Effects();
        }

        @Bean
        Listeners badInputListeners(Effects effects) {
            return new Listeners(effects);
        }

        @Bean
        KafkaAdmin.NewTopics badInputTopics(@Value("${sumi.test.topic-suffix}") String topicSuffix) {
            List<NewTopic> topics = new ArrayList<>();
            for (String row : ROWS) {
                topics.add(new NewTopic("bad." + row + topicSuffix, 1, (short) 1));
                topics.add(new NewTopic("bad." + row + topicSuffix + "-dlt", 1, (short) 1));
            }
            return new KafkaAdmin.NewTopics(topics.toArray(NewTopic[]::new));
        }

        /**
         * JSON values through an ErrorHandlingDeserializer, as Spring Kafka recommends. Not named
         * jsonFactory: Boot 4.1's JacksonAutoConfiguration has a bean of that name.
         */
        @Bean
        @SuppressWarnings({"unchecked", "rawtypes"})
        ConcurrentKafkaListenerContainerFactory<Object, Object> jsonListenerFactory(
                ConcurrentKafkaListenerContainerFactoryConfigurer configurer,
                @Value("${spring.kafka.bootstrap-servers}") String bootstrapServers) {
            Map<String, Object> properties = new HashMap<>();
            properties.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
            properties.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            DefaultKafkaConsumerFactory<String, Order> consumerFactory = new DefaultKafkaConsumerFactory<>(
                    properties,
                    new ErrorHandlingDeserializer<>(new StringDeserializer()),
                    new ErrorHandlingDeserializer<>(new JacksonJsonDeserializer<>(Order.class).ignoreTypeHeaders()));
            ConcurrentKafkaListenerContainerFactory<Object, Object> factory =
                    new ConcurrentKafkaListenerContainerFactory<>();
            configurer.configure(factory, (DefaultKafkaConsumerFactory) consumerFactory);
            return factory;
        }
    }

    static class Listeners {

        private final Effects effects;

        Listeners(Effects effects) {
            this.effects = effects;
        }

        @KafkaListener(
                id = "bad-nokey",
                topics = "bad.nokey${sumi.test.topic-suffix}",
                groupId = "bad-nokey${sumi.test.topic-suffix}")
        @IdempotentHandler
        public void onNoKey(String payload) {
            effects.ran("bad-nokey", payload);
        }

        @KafkaListener(
                id = "bad-empty",
                topics = "bad.empty${sumi.test.topic-suffix}",
                groupId = "bad-empty${sumi.test.topic-suffix}")
        @IdempotentHandler
        public void onEmpty(String payload) {
            effects.ran("bad-empty", payload);
        }

        @KafkaListener(
                id = "bad-long",
                topics = "bad.long${sumi.test.topic-suffix}",
                groupId = "bad-long${sumi.test.topic-suffix}")
        @IdempotentHandler
        public void onLong(String payload) {
            effects.ran("bad-long", payload);
        }

        @KafkaListener(
                id = "bad-utf8",
                topics = "bad.utf8${sumi.test.topic-suffix}",
                groupId = "bad-utf8${sumi.test.topic-suffix}")
        @IdempotentHandler
        public void onUtf8(String payload) {
            effects.ran("bad-utf8", payload);
        }

        @KafkaListener(
                id = "bad-nul",
                topics = "bad.nul${sumi.test.topic-suffix}",
                groupId = "bad-nul${sumi.test.topic-suffix}")
        @IdempotentHandler
        public void onNul(String payload) {
            effects.ran("bad-nul", payload);
        }

        @KafkaListener(
                id = "bad-space",
                topics = "bad.space${sumi.test.topic-suffix}",
                groupId = "bad-space${sumi.test.topic-suffix}")
        @IdempotentHandler
        public void onSpace(String payload) {
            effects.ran("bad-space", payload);
        }

        @KafkaListener(
                id = "bad-fp-reject",
                topics = "bad.fp-reject${sumi.test.topic-suffix}",
                groupId = "bad-fp-reject${sumi.test.topic-suffix}")
        @IdempotentHandler(onFingerprintMismatch = FingerprintMismatchPolicy.REJECT)
        public void onFingerprintReject(String payload) {
            effects.ran("bad-fp-reject", payload);
        }

        @KafkaListener(
                id = "bad-fp-default",
                topics = "bad.fp-default${sumi.test.topic-suffix}",
                groupId = "bad-fp-default${sumi.test.topic-suffix}")
        @IdempotentHandler
        public void onFingerprintDefault(String payload) {
            effects.ran("bad-fp-default", payload);
        }

        @KafkaListener(
                id = "bad-json",
                topics = "bad.json${sumi.test.topic-suffix}",
                groupId = "bad-json${sumi.test.topic-suffix}",
                containerFactory = "jsonListenerFactory")
        @IdempotentHandler
        public void onJson(Order order) {
            effects.ran("bad-json", "{\"id\":\"" + order.id() + "\",\"amount\":" + order.amount() + "}");
        }

        @KafkaListener(
                id = "bad-dead-letters",
                groupId = "bad-dead-letters${sumi.test.topic-suffix}",
                topics = {
                    "bad.nokey${sumi.test.topic-suffix}-dlt",
                    "bad.empty${sumi.test.topic-suffix}-dlt",
                    "bad.long${sumi.test.topic-suffix}-dlt",
                    "bad.utf8${sumi.test.topic-suffix}-dlt",
                    "bad.nul${sumi.test.topic-suffix}-dlt",
                    "bad.space${sumi.test.topic-suffix}-dlt",
                    "bad.fp-reject${sumi.test.topic-suffix}-dlt",
                    "bad.fp-default${sumi.test.topic-suffix}-dlt",
                    "bad.json${sumi.test.topic-suffix}-dlt"
                })
        public void onDeadLetter(ConsumerRecord<String, String> record) {
            effects.deadLetter(record);
        }
    }
    /**
     * The table, the same for every variant: only where a rejected record goes differs (the
     * dead-letter topic, or logged and skipped by Spring Kafka's default recoverer).
     */
    static Stream<Row> rows(String variant, Goes rejected) {
        byte[] prefix = key(variant, "utf8", "").getBytes(StandardCharsets.UTF_8);
        return Stream.of(
                new Row(
                        "no key header",
                        "nokey",
                        List.of(Sent.rejected((String) null, "no key here")),
                        new Expected(
                                rejected,
                                MissingIdempotencyKeyException.class,
                                List.of("No idempotency key", "outbox-id", "@IdempotentHandler(key"))),
                new Row(
                        "empty key header",
                        "empty",
                        List.of(Sent.rejected("", "empty key")),
                        new Expected(
                                rejected,
                                MissingIdempotencyKeyException.class,
                                List.of(
                                        "No idempotency key",
                                        "outbox-id",
                                        "empty or blank",
                                        "@IdempotentHandler(key"))),
                new Row(
                        "201-character key (the column takes 200)",
                        "long",
                        List.of(Sent.rejected(longKey(variant), "long key")),
                        new Expected(
                                rejected,
                                InvalidIdempotencyKeyException.class,
                                List.of("201 characters", "at most 200", "not truncated", "@IdempotentHandler(key"))),
                // Two keys that differ only in bytes that are not UTF-8: decoded with replacement
                // characters they would be one key, and the second message would be skipped.
                new Row(
                        "invalid UTF-8 bytes in the key header",
                        "utf8",
                        List.of(
                                Sent.rejected(concat(prefix, (byte) 0xFF), "first binary key"),
                                Sent.rejected(concat(prefix, (byte) 0xFE), "second binary key")),
                        new Expected(
                                rejected,
                                InvalidIdempotencyKeyException.class,
                                List.of("not valid UTF-8", "Send the key as UTF-8 text (e.g. hex or Base64"))),
                new Row(
                        "key containing NUL",
                        "nul",
                        List.of(Sent.rejected(key(variant, "nul", "a\u0000b"), "nul key")),
                        new Expected(
                                rejected,
                                InvalidIdempotencyKeyException.class,
                                List.of("NUL character (U+0000)", "rejected, not altered", "hex or Base64"))),
                new Row(
                        "key with a trailing space (another key than without)",
                        "space",
                        List.of(
                                Sent.runs(key(variant, "space", "k"), "without space"),
                                Sent.runs(key(variant, "space", "k "), "with space")),
                        Expected.processed()),
                new Row(
                        "same key, another payload (fingerprint-mismatch = REJECT)",
                        "fp-reject",
                        List.of(
                                Sent.runs(key(variant, "fp-reject", "k"), "first payload"),
                                Sent.rejected(key(variant, "fp-reject", "k"), "other payload")),
                        new Expected(
                                rejected,
                                FingerprintMismatchException.class,
                                List.of("another payload", "reused the key"))),
                new Row(
                        "same key, another payload (default policy WARN)",
                        "fp-default",
                        List.of(
                                Sent.runs(key(variant, "fp-default", "k"), "first payload"),
                                Sent.rejected(key(variant, "fp-default", "k"), "other payload")),
                        new Expected(
                                Goes.ACKED_AS_DUPLICATE,
                                null,
                                List.of("arrived with another payload", "treating it as the same message"))),
                new Row(
                        "unreadable payload (JSON, ErrorHandlingDeserializer)",
                        "json",
                        List.of(Sent.rejected(key(variant, "json", "bad"), "{not json")),
                        new Expected(rejected, DeserializationException.class, List.of("failed to deserialize"))));
    }

    static String key(String variant, String row, String suffix) {
        return variant + "-" + row + "-" + suffix;
    }

    static String longKey(String variant) {
        String start = key(variant, "long", "");
        return start + "x".repeat(201 - start.length());
    }

    static byte[] concat(byte[] prefix, byte last) {
        byte[] bytes = new byte[prefix.length + 1];
        System.arraycopy(prefix, 0, bytes, 0, prefix.length);
        bytes[prefix.length] = last;
        return bytes;
    }
}
