package io.sumi.outbox.cdc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sumi.outbox.DispatchOutcome;
import io.sumi.outbox.Outbox;
import io.sumi.outbox.OutboxBackoff;
import io.sumi.outbox.OutboxDispatcher;
import io.sumi.outbox.OutboxHeaders;
import io.sumi.outbox.OutboxMessage;
import io.sumi.outbox.OutboxPublisher;
import io.sumi.outbox.OutboxRecord;
import io.sumi.outbox.OutboxTable;
import io.sumi.outbox.PublishResult;
import io.sumi.outbox.kafka.KafkaOutboxPublisher;
import io.sumi.testing.KafkaBrokerProcess;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Timestamp;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.connect.runtime.standalone.StandaloneConfig;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.kafka.test.EmbeddedKafkaKraftBroker;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The CDC path against a real PostgreSQL with {@code wal_level = logical} ({@link LogicalPostgres})
 * and a real Kafka broker (spring-kafka-test's in-process KRaft broker).
 */
class OutboxCdcIntegrationTests {

    private static final Duration WAIT = Duration.ofSeconds(60);

    private static EmbeddedKafkaKraftBroker kafka;
    private static KafkaOutboxPublisher publisher;
    private static KafkaConsumer<String, String> consumer;
    private static final List<ConsumerRecord<String, String>> received = new CopyOnWriteArrayList<>();
    private static Thread poller;
    private static final AtomicBoolean polling = new AtomicBoolean(true);

    private final List<AutoCloseable> closeables = new ArrayList<>();

    @BeforeAll
    static void startKafka() {
        kafka = new EmbeddedKafkaKraftBroker(1, 1);
        kafka.afterPropertiesSet();
        Map<String, Object> producer = new HashMap<>();
        producer.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.getBrokersAsString());
        producer.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        producer.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        publisher = KafkaOutboxPublisher.create(producer, Duration.ofSeconds(10));
        Map<String, Object> config = new HashMap<>();
        config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.getBrokersAsString());
        config.put(ConsumerConfig.GROUP_ID_CONFIG, "cdc-tests");
        config.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        config.put(ConsumerConfig.METADATA_MAX_AGE_CONFIG, 500);
        config.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
        config.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
        consumer = new KafkaConsumer<>(config);
        consumer.subscribe(java.util.regex.Pattern.compile("cdc-.*"));
        poller = new Thread(() -> {
            while (polling.get()) {
                consumer.poll(Duration.ofMillis(100)).forEach(received::add);
            }
            consumer.close();
        });
        poller.start();
    }

    @AfterAll
    static void stopKafka() throws Exception {
        polling.set(false);
        poller.join(10_000);
        publisher.close();
        kafka.destroy();
    }

    @AfterEach
    void close() throws Exception {
        for (int i = closeables.size() - 1; i >= 0; i--) {
            closeables.get(i).close();
        }
    }

    /** A database of its own, its outbox and a dispatcher (not started) on it. */
    final class Fixture {
        final String url;
        final HikariDataSource dataSource;
        final OutboxTable table;
        final Outbox outbox;
        final TransactionTemplate tx;
        final JdbcTemplate jdbc;
        final String slot;

        Fixture(String name) {
            url = LogicalPostgres.get().newDatabase("sumi_cdc_" + name);
            dataSource = LogicalPostgres.get().dataSource(url);
            closeables.add(dataSource);
            table = OutboxTable.of(dataSource);
            outbox = Outbox.builder(table).build();
            tx = new TransactionTemplate(new DataSourceTransactionManager(dataSource));
            jdbc = new JdbcTemplate(dataSource);
            slot = "sumi_" + name + "_" + ProcessHandle.current().pid();
            closeables.add(() -> dropSlot());
        }

        OutboxDispatcher dispatcher(OutboxPublisher through) {
            return dispatcher(through, Duration.ofMillis(50), Duration.ofMillis(200));
        }

        OutboxDispatcher dispatcher(OutboxPublisher through, Duration minPollInterval, Duration maxPollInterval) {
            return dispatcher(through, minPollInterval, maxPollInterval, Duration.ZERO);
        }

        OutboxDispatcher dispatcher(
                OutboxPublisher through, Duration minPollInterval, Duration maxPollInterval, Duration pollDelay) {
            OutboxDispatcher dispatcher = OutboxDispatcher.builder(table, through)
                    .pollDelay(pollDelay)
                    .sendTimeout(Duration.ofSeconds(10))
                    .lease(Duration.ofSeconds(30))
                    .minPollInterval(minPollInterval)
                    .maxPollInterval(maxPollInterval)
                    .build();
            closeables.add(dispatcher);
            return dispatcher;
        }

        OutboxCdc cdc(OutboxDispatcher dispatcher) {
            OutboxCdc cdc = cdcBuilder(dispatcher).build();
            closeables.add(cdc);
            return cdc;
        }

        OutboxCdc.Builder cdcBuilder(OutboxDispatcher dispatcher) {
            return OutboxCdc.builder(dispatcher, url)
                    .user(LogicalPostgres.get().user())
                    .password(LogicalPostgres.get().password())
                    .slotName(slot)
                    .publicationName(slot)
                    .takeOverInterval(Duration.ofMillis(500))
                    .offsetFlushInterval(Duration.ZERO);
        }

        /** Starts {@code cdc} and waits until its slot streams (rows committed from now on are in the log). */
        void startStreaming(OutboxCdc cdc) {
            cdc.start();
            await().atMost(WAIT).until(() -> cdc.isStreaming() && slotActive());
        }

        boolean slotActive() {
            List<Boolean> active = jdbc.queryForList(
                    "SELECT active FROM pg_replication_slots WHERE slot_name = ?", Boolean.class, slot);
            return !active.isEmpty() && active.get(0);
        }

        List<Long> append(List<OutboxMessage> messages) {
            return tx.execute(status -> outbox.appendAll(messages));
        }

        long undispatched() {
            Long count = jdbc.queryForObject("SELECT COUNT(*) FROM outbox WHERE dispatched_at IS NULL", Long.class);
            return count == null ? 0 : count;
        }

        void dropSlot() {
            try (Connection connection = DriverManager.getConnection(
                            url,
                            LogicalPostgres.get().user(),
                            LogicalPostgres.get().password());
                    var statement = connection.createStatement()) {
                await().atMost(WAIT).until(() -> {
                    try (var rs = statement.executeQuery(
                            "SELECT active FROM pg_replication_slots WHERE slot_name = '" + slot + "'")) {
                        return !rs.next() || !rs.getBoolean(1);
                    }
                });
                statement.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots"
                        + " WHERE slot_name = '" + slot + "'");
            } catch (Exception ex) {
                throw new IllegalStateException(ex);
            }
        }
    }

    private static List<OutboxMessage> messages(String topic, int aggregates, int perAggregate, String tag) {
        List<OutboxMessage> messages = new ArrayList<>();
        for (int n = 0; n < perAggregate; n++) {
            for (int a = 0; a < aggregates; a++) {
                messages.add(OutboxMessage.builder("agg-" + a, topic, tag + ":" + a + ":" + n)
                        .header("x-test", tag)
                        .build());
            }
        }
        return messages;
    }

    private static List<ConsumerRecord<String, String>> receivedOn(String topic) {
        return received.stream().filter(r -> r.topic().equals(topic)).toList();
    }

    private static String header(ConsumerRecord<String, String> record, String name) {
        Header header = record.headers().lastHeader(name);
        return header == null ? null : new String(header.value(), StandardCharsets.UTF_8);
    }

    private static Map<String, Long> sendsPerOutboxId(List<ConsumerRecord<String, String>> records) {
        return records.stream()
                .collect(Collectors.groupingBy(r -> header(r, OutboxHeaders.OUTBOX_ID), Collectors.counting()));
    }

    /** Per aggregate, the payloads' sequence numbers in the order the broker holds them. */
    private static void assertInOrderPerAggregate(List<ConsumerRecord<String, String>> records) {
        Map<String, List<Integer>> byAggregate = new LinkedHashMap<>();
        for (ConsumerRecord<String, String> record : records) {
            String[] parts = record.value().split(":");
            byAggregate.computeIfAbsent(record.key(), k -> new ArrayList<>()).add(Integer.parseInt(parts[2]));
        }
        byAggregate.forEach((aggregate, sequence) ->
                assertThat(sequence).as("order of %s", aggregate).isSorted());
    }

    /**
     * Per aggregate, the order within each of {@code tags} (two-character payload prefixes, in the
     * order they were written: before and after a restart or an outage), and every row of one tag
     * before every row of the next.
     */
    private static void assertInOrderPerAggregateAcross(List<ConsumerRecord<String, String>> records, String... tags) {
        for (String tag : tags) {
            assertInOrderPerAggregate(records.stream()
                    .filter(r -> r.value().startsWith(tag + ":"))
                    .toList());
        }
        Map<String, List<String>> tagsPerAggregate = new HashMap<>();
        records.forEach(r -> tagsPerAggregate
                .computeIfAbsent(r.key(), k -> new ArrayList<>())
                .add(r.value().substring(0, 2)));
        tagsPerAggregate.values().forEach(sequence -> assertThat(sequence).isSorted());
    }

    // ---------------------------------------------------------------- tests

    @Test
    void insertsReachKafkaThroughTheLogWithThePollingPathsKeyAndHeaders() {
        Fixture f = new Fixture("e2e");
        OutboxDispatcher dispatcher = f.dispatcher(publisher);
        // One row by polling first, to compare with.
        long polled = f.append(List.of(OutboxMessage.builder("agg-p", "cdc-e2e", "polled:0:0")
                        .header("x-test", "e2e")
                        .build()))
                .get(0);
        assertThat(dispatcher.dispatchOnce().sent()).isEqualTo(1);
        OutboxCdc cdc = f.cdc(dispatcher);
        f.startStreaming(cdc);

        List<Long> ids = f.append(messages("cdc-e2e", 3, 5, "e2e"));

        await().atMost(WAIT).until(() -> receivedOn("cdc-e2e").size() >= 16);
        List<ConsumerRecord<String, String>> records = receivedOn("cdc-e2e");
        assertThat(records).hasSize(16);
        await().atMost(WAIT).until(() -> cdc.rowsSent() == 15);
        await().atMost(WAIT).until(() -> f.undispatched() == 0);
        assertThat(f.table.find(ids.get(0)).orElseThrow().outcome()).isEqualTo(DispatchOutcome.SENT);
        assertInOrderPerAggregate(records);
        ConsumerRecord<String, String> byPolling = records.stream()
                .filter(r -> header(r, OutboxHeaders.OUTBOX_ID).equals(Long.toString(polled)))
                .findFirst()
                .orElseThrow();
        ConsumerRecord<String, String> byCdc = records.stream()
                .filter(r -> header(r, OutboxHeaders.OUTBOX_ID).equals(Long.toString(ids.get(0))))
                .findFirst()
                .orElseThrow();
        assertThat(byCdc.key()).isEqualTo("agg-0");
        assertThat(byCdc.value()).isEqualTo("e2e:0:0");
        assertThat(header(byCdc, "x-test")).isEqualTo("e2e");
        Set<String> cdcHeaders = new TreeSet<>();
        byCdc.headers().forEach(h -> cdcHeaders.add(h.key()));
        Set<String> pollingHeaders = new TreeSet<>();
        byPolling.headers().forEach(h -> pollingHeaders.add(h.key()));
        assertThat(cdcHeaders).isEqualTo(pollingHeaders);
        assertThat(sendsPerOutboxId(records).values()).containsOnly(1L);

        // The slot as the gauges and the health contributor see it.
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        new OutboxCdcMetrics(cdc, Duration.ZERO).bindTo(meters);
        assertThat(cdc.slotStatus().exists()).isTrue();
        assertThat(meters.get("sumi.outbox.cdc.slot.active").gauge().value()).isEqualTo(1.0);
        assertThat(meters.get("sumi.outbox.cdc.streaming").gauge().value()).isEqualTo(1.0);
        assertThat(meters.get("sumi.outbox.cdc.slot.retained").gauge().value()).isPositive();
        cdc.stop(Duration.ofSeconds(30));
        await().atMost(WAIT).until(() -> !cdc.slotStatus().active());
        assertThat(meters.get("sumi.outbox.cdc.slot.active").gauge().value()).isZero();
        assertThat(meters.get("sumi.outbox.cdc.streaming").gauge().value()).isZero();
        // Written while nobody streams: the slot retains the WAL.
        long retained = cdc.slotStatus().retainedWalBytes();
        f.append(messages("cdc-e2e-idle", 1, 50, "idle"));
        assertThat(cdc.slotStatus().retainedWalBytes()).isGreaterThan(retained);
        assertThat(cdc.slotStatus().lagBytes()).isPositive();
    }

    @Test
    void aRowCommittedOnAnInstanceWithoutAPollingWakeUpReachesTheBrokerInMilliseconds() {
        Fixture f = new Fixture("lag");
        // Polling would take an hour: only the log can bring the rows.
        OutboxDispatcher dispatcher = f.dispatcher(publisher, Duration.ofHours(1), Duration.ofHours(1));
        dispatcher.start();
        OutboxCdc cdc = f.cdc(dispatcher);
        f.startStreaming(cdc);
        f.append(messages("cdc-lag", 1, 1, "warm"));
        await().atMost(WAIT).until(() -> receivedOn("cdc-lag").size() >= 1);

        List<Long> lags = new ArrayList<>();
        for (int i = 0; i < 30; i++) {
            int before = receivedOn("cdc-lag").size();
            long committed = System.nanoTime();
            f.append(messages("cdc-lag", 1, 1, "lag" + i));
            await().atMost(WAIT)
                    .pollInterval(Duration.ofMillis(2))
                    .until(() -> receivedOn("cdc-lag").size() > before);
            lags.add((System.nanoTime() - committed) / 1_000_000);
        }
        lags.sort(null);
        System.out.printf(
                "CDC lag commit -> consumer (30 rows, one at a time): p50 %d ms, p90 %d ms, max %d ms%n",
                lags.get(15), lags.get(27), lags.get(29));
        // Counted once the marks are written, which may be just after the consumer got the record.
        await().atMost(WAIT).until(() -> cdc.rowsSent() == 31);
        assertThat(f.undispatched()).isZero();
        assertThat(lags.get(15)).isLessThan(2_000);
    }

    @Test
    void orderAndOffsetsSurviveAnEngineRestart() {
        Fixture f = new Fixture("restart");
        OutboxDispatcher dispatcher = f.dispatcher(publisher);
        OutboxCdc first = f.cdc(dispatcher);
        f.startStreaming(first);
        f.append(messages("cdc-restart", 4, 25, "r1"));
        await().atMost(WAIT).until(() -> receivedOn("cdc-restart").size() >= 100);
        first.stop(Duration.ofSeconds(30));
        assertThat(f.jdbc.queryForObject(
                        "SELECT COUNT(*) FROM sumi_outbox_cdc_offsets WHERE store_name = ?", Long.class, f.slot))
                .isPositive();

        // Written while no engine runs: in the slot, streamed by the next engine from the stored offsets.
        f.append(messages("cdc-restart", 4, 25, "r2"));
        OutboxCdc second = f.cdc(dispatcher);
        f.startStreaming(second);
        f.append(messages("cdc-restart", 4, 25, "r3"));

        await().atMost(WAIT).until(() -> receivedOn("cdc-restart").size() >= 300);
        await().atMost(WAIT).until(() -> f.undispatched() == 0);
        List<ConsumerRecord<String, String>> records = receivedOn("cdc-restart");
        // Nothing sent twice: the offsets survived, and rows re-read would not be claimed again.
        assertThat(sendsPerOutboxId(records)).hasSize(300);
        assertThat(sendsPerOutboxId(records).values()).containsOnly(1L);
        await().atMost(WAIT).until(() -> second.rowsSent() == 200);
        assertInOrderPerAggregateAcross(records, "r1", "r2", "r3");
    }

    @Test
    void cdcAndPollingTogetherLoseNothingAndSendNothingTwice() throws Exception {
        Fixture f = new Fixture("together");
        OutboxDispatcher dispatcher = f.dispatcher(publisher);
        // Polling as the starter runs it under CDC (a poll delay, here short), at a short interval.
        OutboxDispatcher poller =
                f.dispatcher(publisher, Duration.ofMillis(100), Duration.ofMillis(100), Duration.ofSeconds(1));
        OutboxCdc cdc = f.cdc(dispatcher);
        f.startStreaming(cdc);
        poller.start();
        List<Thread> writers = new ArrayList<>();
        for (int w = 0; w < 4; w++) {
            String tag = "w" + w;
            Thread writer = new Thread(() -> {
                for (int batch = 0; batch < 25; batch++) {
                    List<OutboxMessage> messages = new ArrayList<>();
                    for (int a = 0; a < 10; a++) {
                        messages.add(OutboxMessage.of(tag + "-agg-" + a, "cdc-together", tag + ":" + a + ":" + batch));
                    }
                    f.append(messages);
                }
            });
            writers.add(writer);
            writer.start();
        }
        for (Thread writer : writers) {
            writer.join();
        }
        await().atMost(WAIT)
                .until(() -> f.undispatched() == 0 && receivedOn("cdc-together").size() >= 1000);
        List<ConsumerRecord<String, String>> records = receivedOn("cdc-together");
        Map<String, Long> sends = sendsPerOutboxId(records);
        assertThat(sends).hasSize(1000);
        // The stated bound: a second send only after a stall longer than lease - send timeout, a crash
        // between ack and mark, or a late ack. None of these happens here.
        assertThat(sends.values()).containsOnly(1L);
        assertInOrderPerAggregate(records);
        assertThat(cdc.rowsSent()).as("the log's path sends first").isPositive();
        System.out.printf(
                "CDC and polling together: %d rows, %d sent by CDC, %d by polling%n",
                records.size(), cdc.rowsSent(), records.size() - cdc.rowsSent());
    }

    @Test
    void aSecondInstanceTakesOverWhenTheStreamingOneStops() {
        Fixture f = new Fixture("takeover");
        OutboxDispatcher dispatcher = f.dispatcher(publisher);
        OutboxCdc a = f.cdc(dispatcher);
        OutboxCdc b = f.cdc(dispatcher);
        f.startStreaming(a);
        b.start();
        await().during(Duration.ofSeconds(2)).atMost(WAIT).until(() -> !b.holdsLock() && a.isStreaming());
        f.append(messages("cdc-takeover", 2, 5, "t1"));
        await().atMost(WAIT).until(() -> receivedOn("cdc-takeover").size() >= 10);
        await().atMost(WAIT).until(() -> a.rowsSent() == 10);
        assertThat(b.rowsSeen()).isZero();

        long stoppedAt = System.nanoTime();
        a.stop(Duration.ofSeconds(30));
        long stopTook = System.nanoTime() - stoppedAt;
        f.append(messages("cdc-takeover", 2, 5, "t2"));
        await().atMost(WAIT).until(() -> receivedOn("cdc-takeover").size() >= 20);
        long takeOver = System.nanoTime() - stoppedAt;
        await().atMost(WAIT).until(() -> b.rowsSent() == 10);
        assertThat(sendsPerOutboxId(receivedOn("cdc-takeover")).values()).containsOnly(1L);
        System.out.printf(
                "Take-over: the first instance stopped in %d ms; the second streamed the next rows %d ms after the stop"
                        + " (take-over interval 500 ms)%n",
                stopTook / 1_000_000, takeOver / 1_000_000);
    }

    /** The waiting lock sessions of {@code slot}: their query_start, one per waiting backend. */
    private static List<Timestamp> lockWaits(Fixture f) {
        return f.jdbc.queryForList(
                "SELECT query_start FROM pg_stat_activity WHERE application_name = ? AND wait_event_type = 'Lock'"
                        + " AND wait_event = 'advisory'",
                Timestamp.class,
                OutboxCdc.APPLICATION_NAME_PREFIX + f.slot);
    }

    @Test
    void aWaitingInstanceBlocksOnTheLockWithoutAskingAgainAndStopsAtOnce() {
        Fixture f = new Fixture("waiting");
        OutboxDispatcher dispatcher = f.dispatcher(publisher);
        OutboxCdc a = f.cdc(dispatcher);
        OutboxCdc b = f.cdc(dispatcher);
        f.startStreaming(a);
        b.start();
        await().atMost(WAIT).until(() -> lockWaits(f).size() == 1);
        Timestamp waitingSince = lockWaits(f).get(0);
        // Four take-over intervals (500 ms): an instance that tried the lock again every interval
        // would show a newer query_start, or no wait at all between two tries.
        await().during(Duration.ofSeconds(2))
                .atMost(WAIT)
                .until(() -> lockWaits(f).equals(List.of(waitingSince)) && !b.holdsLock());

        long stopping = System.nanoTime();
        b.stop(Duration.ofSeconds(30));
        long stopMillis = (System.nanoTime() - stopping) / 1_000_000;
        assertThat(stopMillis)
                .as("stop() of a waiting instance cancels its wait")
                .isLessThan(10_000);
        await().atMost(WAIT).until(() -> lockWaits(f).isEmpty());
        assertThat(a.isStreaming()).isTrue();
        assertThat(b.holdsLock()).isFalse();
        System.out.printf("A waiting instance stopped in %d ms%n", stopMillis);
    }

    @Test
    void heartbeatsAdvanceTheSlotOfAQuietOutboxWhileTheDatabaseWritesElsewhere() {
        Fixture f = new Fixture("heartbeat");
        OutboxDispatcher dispatcher = f.dispatcher(publisher);
        OutboxCdc cdc = f.cdcBuilder(dispatcher)
                .heartbeatInterval(Duration.ofMillis(500))
                .build();
        closeables.add(cdc);
        f.startStreaming(cdc);
        // Other tables' WAL: nothing of it is in the publication, so only the heartbeat lets the
        // slot confirm past it.
        f.jdbc.execute("CREATE TABLE elsewhere (id BIGINT, filler TEXT)");
        f.jdbc.update("INSERT INTO elsewhere SELECT g, repeat('x', 200) FROM generate_series(1, 20000) g");
        String written = f.jdbc.queryForObject("SELECT pg_current_wal_lsn()::text", String.class);
        await().atMost(WAIT)
                .until(() -> Boolean.TRUE.equals(f.jdbc.queryForObject(
                        "SELECT confirmed_flush_lsn >= ?::pg_lsn FROM pg_replication_slots WHERE slot_name = ?",
                        Boolean.class,
                        written,
                        f.slot)));
        assertThat(f.jdbc.queryForObject(
                        "SELECT COUNT(*) FROM sumi_outbox_cdc_heartbeat WHERE slot_name = ?", Long.class, f.slot))
                .as("one row per slot, replaced at each beat")
                .isEqualTo(1L);
        assertThat(cdc.rowsSent()).isZero();
    }

    @Test
    void theOffsetsStoreWritesOnlyWhatChanged() throws Exception {
        Fixture f = new Fixture("offsets");
        try (Connection connection = f.dataSource.getConnection()) {
            JdbcOffsetBackingStore.createTable(connection);
        }
        JdbcOffsetBackingStore.register("offsets-test", new JdbcOffsetBackingStore.Registration(f.dataSource, f.slot));
        JdbcOffsetBackingStore store = new JdbcOffsetBackingStore();
        try {
            // bootstrap.servers: required by Kafka Connect 4.2's WorkerConfig (Boot 4.1), never used by the store.
            store.configure(new StandaloneConfig(Map.of(
                    "bootstrap.servers",
                    "127.0.0.1:9",
                    "key.converter",
                    "org.apache.kafka.connect.json.JsonConverter",
                    "value.converter",
                    "org.apache.kafka.connect.json.JsonConverter",
                    "offset.storage.file.filename",
                    "",
                    JdbcOffsetBackingStore.REGISTRATION,
                    "offsets-test")));
            store.start();
            ByteBuffer key = ByteBuffer.wrap("partition".getBytes(StandardCharsets.UTF_8));
            Function<String, ByteBuffer> value = v -> ByteBuffer.wrap(v.getBytes(StandardCharsets.UTF_8));
            Supplier<Timestamp> updatedAt = () -> f.jdbc.queryForObject(
                    "SELECT updated_at FROM sumi_outbox_cdc_offsets WHERE store_name = ?", Timestamp.class, f.slot);

            // xmin: the transaction that wrote the row last, changed by any write whatever the clock.
            Supplier<String> writer = () -> f.jdbc.queryForObject(
                    "SELECT xmin::text FROM sumi_outbox_cdc_offsets WHERE store_name = ?", String.class, f.slot);

            store.set(Map.of(key, value.apply("lsn-1")), (error, ignored) -> {}).get();
            Timestamp first = updatedAt.get();
            String firstWriter = writer.get();
            store.set(Map.of(key, value.apply("lsn-1")), (error, ignored) -> {}).get();
            assertThat(writer.get()).as("the same offset again: no write").isEqualTo(firstWriter);
            assertThat(updatedAt.get()).as("the same offset again: no write").isEqualTo(first);
            store.set(Map.of(key, value.apply("lsn-2")), (error, ignored) -> {}).get();
            assertThat(writer.get()).as("a moved offset is written").isNotEqualTo(firstWriter);
            assertThat(updatedAt.get()).as("a moved offset is written").isAfter(first);
            assertThat(f.jdbc.queryForObject(
                            "SELECT convert_from(offset_value, 'UTF8') FROM sumi_outbox_cdc_offsets WHERE store_name = ?",
                            String.class,
                            f.slot))
                    .isEqualTo("lsn-2");
        } finally {
            store.stop();
            JdbcOffsetBackingStore.unregister("offsets-test");
        }
    }

    @Test
    void afterKill9OfTheStreamingProcessAnotherTakesOverAndNothingIsLost() throws Exception {
        Fixture f = new Fixture("kill");
        Path out = Path.of("target", "cdc-kill-" + f.slot + ".log").toAbsolutePath();
        String classPath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        Process child = new ProcessBuilder(
                        Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                        "-Xmx256m",
                        "-XX:TieredStopAtLevel=1",
                        "-cp",
                        classPath,
                        CdcInstanceMain.class.getName(),
                        f.url,
                        LogicalPostgres.get().user(),
                        f.slot,
                        kafka.getBrokersAsString())
                .redirectErrorStream(true)
                .redirectOutput(out.toFile())
                .start();
        closeables.add(child::destroyForcibly);
        await().atMost(Duration.ofSeconds(120))
                .until(() -> Files.readString(out).contains("STREAMING"));

        // This instance: CDC waiting for the slot, and polling as the safety net (short lease for the test).
        OutboxDispatcher dispatcher = OutboxDispatcher.builder(f.table, publisher)
                .lease(Duration.ofSeconds(20))
                .sendTimeout(Duration.ofSeconds(10))
                .backoff(new OutboxBackoff(Duration.ofSeconds(1), 1.0, Duration.ofSeconds(1), 0))
                .minPollInterval(Duration.ofSeconds(1))
                .maxPollInterval(Duration.ofSeconds(1))
                .build();
        closeables.add(dispatcher);
        OutboxCdc standby = f.cdc(dispatcher);
        standby.start();
        f.append(messages("cdc-kill", 5, 10, "k1"));
        await().atMost(WAIT).until(() -> receivedOn("cdc-kill").size() >= 50);
        assertThat(standby.rowsSeen()).isZero();
        dispatcher.start();

        // A writer keeps appending (800 rows, 50 aggregates) while the streaming process dies.
        List<Long> written = new CopyOnWriteArrayList<>();
        Thread writer = new Thread(() -> {
            for (int batch = 0; batch < 80; batch++) {
                List<OutboxMessage> rows = new ArrayList<>();
                for (int a = 0; a < 10; a++) {
                    int aggregate = (batch * 10 + a) % 50;
                    rows.add(OutboxMessage.of("k2-" + aggregate, "cdc-kill", "k2:" + aggregate + ":" + batch));
                }
                written.addAll(f.append(rows));
            }
        });
        writer.start();
        await().atMost(WAIT).until(() -> written.size() >= 100);
        long killedAt = System.nanoTime();
        child.destroyForcibly().waitFor();
        long[] tookOver = new long[2];
        await().atMost(WAIT).until(standby::holdsLock);
        tookOver[0] = System.nanoTime() - killedAt;
        // Taken over: the standby's engine reads the rows written since from the log.
        await().atMost(WAIT.multipliedBy(2)).until(() -> standby.rowsSeen() > 0);
        tookOver[1] = System.nanoTime() - killedAt;
        writer.join();

        await().atMost(WAIT.multipliedBy(2))
                .until(() -> f.undispatched() == 0 && receivedOn("cdc-kill").size() >= 50 + written.size());
        Map<String, Long> sends = sendsPerOutboxId(receivedOn("cdc-kill"));
        assertThat(sends).hasSize(50 + written.size());
        long doubles = sends.values().stream().filter(n -> n > 1).count();
        // The bound: rows the killed process had sent and not yet marked (one batch at most).
        assertThat(doubles).isLessThanOrEqualTo(OutboxDispatcher.DEFAULT_BATCH_SIZE);
        assertInOrderPerAggregate(receivedOn("cdc-kill").stream()
                .filter(r -> r.value().startsWith("k2:"))
                .toList());
        System.out.printf(
                "kill -9 of the streaming process: the standby held the lock %d ms later and read its first row from"
                        + " the log %d ms later (take-over interval 500 ms); %d rows written during the run, %d sent"
                        + " twice, %d sent by the standby's CDC%n",
                tookOver[0] / 1_000_000, tookOver[1] / 1_000_000, written.size(), doubles, standby.rowsSent());
    }

    /** A CDC path whose next claim fails once (the database unreachable), with no polling at all. */
    private record ClaimFailure(Fixture fixture, OutboxCdc cdc, AtomicBoolean failNextConnection) {}

    private ClaimFailure cdcWhoseNextClaimFails(String name, boolean markBeforeDispatch) {
        Fixture f = new Fixture(name);
        AtomicBoolean failNextConnection = new AtomicBoolean();
        javax.sql.DataSource failing = new org.springframework.jdbc.datasource.DelegatingDataSource(f.dataSource) {
            @Override
            public Connection getConnection() throws java.sql.SQLException {
                // The dispatcher's next claim fails, not the offsets' store (on the same DataSource).
                if (!committingOffsets() && failNextConnection.compareAndSet(true, false)) {
                    throw new java.sql.SQLTransientConnectionException("injected: the database is unreachable");
                }
                return super.getConnection();
            }
        };
        // No polling at all: only the log can bring the row, so it must be read again.
        OutboxDispatcher dispatcher = OutboxDispatcher.builder(OutboxTable.of(failing), publisher)
                .sendTimeout(Duration.ofSeconds(10))
                .lease(Duration.ofSeconds(30))
                .build();
        closeables.add(dispatcher);
        OutboxCdc.Builder builder = f.cdcBuilder(dispatcher);
        OutboxCdc cdc = (markBeforeDispatch ? builder.markBeforeDispatch() : builder).build();
        closeables.add(cdc);
        f.startStreaming(cdc);
        String topic = "cdc-" + name;
        f.append(messages(topic, 1, 1, "before"));
        await().atMost(WAIT).until(() -> receivedOn(topic).size() >= 1);
        await().atMost(WAIT).until(() -> f.undispatched() == 0);
        failNextConnection.set(true);
        return new ClaimFailure(f, cdc, failNextConnection);
    }

    private static boolean committingOffsets() {
        return StackWalker.getInstance(StackWalker.Option.RETAIN_CLASS_REFERENCE)
                .walk(frames -> frames.anyMatch(frame -> frame.getDeclaringClass() == JdbcOffsetBackingStore.class));
    }

    @Test
    void whenTheClaimFailsTheEngineStopsBeforeConfirmingAndTheNextOneReadsTheRowAgain() {
        ClaimFailure run = cdcWhoseNextClaimFails("claimfails", false);
        long id =
                run.fixture().append(messages("cdc-claimfails", 1, 1, "after")).get(0);

        await().atMost(WAIT).until(() -> receivedOn("cdc-claimfails").size() >= 2);
        await().atMost(WAIT).until(() -> run.fixture().undispatched() == 0);
        assertThat(run.failNextConnection()).as("the fault was hit").isFalse();
        assertThat(run.cdc().lastFailure()).isNotNull();
        assertThat(run.fixture().table.find(id).orElseThrow().outcome()).isEqualTo(DispatchOutcome.SENT);
        assertThat(sendsPerOutboxId(receivedOn("cdc-claimfails")).values()).containsOnly(1L);
    }

    /**
     * Negative control of the test above: the same fault, with an engine that marks each batch
     * processed before dispatching it. Its row is confirmed to the slot unsent, so the restarted
     * engine never reads it again (only polling, off here, would find it): the test above would
     * catch that order.
     */
    @Test
    void negativeControlAnEngineThatConfirmsBeforeDispatchingLosesTheRowToTheLog() {
        ClaimFailure run = cdcWhoseNextClaimFails("confirmfirst", true);
        long lost = run.fixture()
                .append(messages("cdc-confirmfirst", 1, 1, "after"))
                .get(0);
        await().atMost(WAIT)
                .until(() -> !run.failNextConnection().get() && run.cdc().lastFailure() != null);

        // Another aggregate's row (not gated behind the lost one): once it arrives, the restarted
        // engine streams from past the lost row.
        run.fixture()
                .append(List.of(OutboxMessage.builder("agg-other", "cdc-confirmfirst", "later")
                        .header("x-test", "later")
                        .build()));
        await().atMost(WAIT)
                .until(() ->
                        receivedOn("cdc-confirmfirst").stream().anyMatch(r -> "later".equals(header(r, "x-test"))));

        assertThat(receivedOn("cdc-confirmfirst"))
                .as("the row whose batch was confirmed before its claim failed")
                .noneMatch(r -> "after".equals(header(r, "x-test")));
        assertThat(run.fixture().table.find(lost).orElseThrow().outcome())
                .as("left undispatched: lost to the log, only polling would find it")
                .isNotEqualTo(DispatchOutcome.SENT);
        assertThat(run.fixture().undispatched()).isEqualTo(1);
    }

    /**
     * PostgreSQL stopped as a crash would and started again (the private cluster, {@code pg_ctl -m
     * immediate}: the slot's confirmed position is what the last checkpoint saved, so the engine may
     * read rows it had sent before). The engine's connections are cut, the supervisor starts it
     * again, and it streams the rows written after the restart; polling is off (an hour), so only
     * the log brings them. Nothing is lost, nothing re-read is sent again (it is marked
     * dispatched), and each aggregate's order holds across the restart.
     */
    @Test
    void afterAPostgresRestartTheEngineStreamsAgainAndLosesNothing() {
        Fixture f = new Fixture("pgrestart");
        OutboxDispatcher dispatcher = f.dispatcher(publisher, Duration.ofHours(1), Duration.ofHours(1));
        OutboxCdc cdc = f.cdc(dispatcher);
        f.startStreaming(cdc);
        f.append(messages("cdc-pgrestart", 3, 10, "p1"));
        await().atMost(WAIT).until(() -> receivedOn("cdc-pgrestart").size() >= 30);
        await().atMost(WAIT).until(() -> f.undispatched() == 0);

        LogicalPostgres.get().restart();

        // The pool's connections died with the server: the first append after it may fail before
        // its commit (nothing written); it is tried again until one commits.
        List<Long> after = new ArrayList<>();
        await().atMost(WAIT).ignoreExceptions().until(() -> {
            after.addAll(f.append(messages("cdc-pgrestart", 3, 10, "p2")));
            return true;
        });
        await().atMost(WAIT).until(() -> receivedOn("cdc-pgrestart").size() >= 60);
        await().atMost(WAIT).until(() -> f.undispatched() == 0);

        assertThat(cdc.lastFailure()).as("the restart stopped the engine").isNotNull();
        assertThat(cdc.isStreaming()).as("streaming again").isTrue();
        assertThat(after).hasSize(30);
        List<ConsumerRecord<String, String>> records = receivedOn("cdc-pgrestart");
        assertThat(sendsPerOutboxId(records)).hasSize(60);
        assertThat(sendsPerOutboxId(records).values()).containsOnly(1L);
        assertInOrderPerAggregateAcross(records, "p1", "p2");
    }

    /**
     * The broker (a real one, a JVM of its own: {@link KafkaBrokerProcess}) killed with SIGKILL while
     * the engine streams, and started again on the same ports and data. The rows written during
     * the outage are read from the log, their sends fail and are recorded as failed attempts (the
     * engine moves on, streaming: it never stops), and polling, the safety net, started only once
     * the broker is back (so every failed attempt before is the engine's), sends them: every row
     * once, in order per aggregate. The broker dies idle, after every earlier send was
     * acknowledged, so no acknowledgement is lost in flight (the stated bound's case).
     */
    @Test
    void aBrokerOutageLeavesItsRowsToPollingWhichSendsThemWhenTheBrokerIsBack() throws Exception {
        Fixture f = new Fixture("outage");
        KafkaBrokerProcess broker =
                KafkaBrokerProcess.onThisClasspath(Path.of("target", "cdc-broker-" + f.slot), "384m");
        closeables.add(broker);
        broker.formatAndStart(Duration.ofMinutes(2));
        broker.createTopic("cdc-outage", 1);
        Map<String, Object> producer = new HashMap<>();
        producer.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
        producer.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        producer.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        producer.put(ProducerConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, 500);
        KafkaOutboxPublisher outagePublisher = KafkaOutboxPublisher.create(producer, Duration.ofSeconds(3));
        closeables.add(outagePublisher);
        OutboxDispatcher dispatcher = OutboxDispatcher.builder(f.table, outagePublisher)
                .lease(Duration.ofSeconds(30))
                .sendTimeout(Duration.ofSeconds(3))
                .backoff(new OutboxBackoff(Duration.ofSeconds(1), 1.0, Duration.ofSeconds(1), 0))
                // Polling as the starter runs it under CDC: behind a poll delay.
                .pollDelay(Duration.ofSeconds(1))
                .minPollInterval(Duration.ofMillis(200))
                .maxPollInterval(Duration.ofMillis(500))
                .build();
        closeables.add(dispatcher);
        OutboxCdc cdc = f.cdc(dispatcher);
        f.startStreaming(cdc);
        List<ConsumerRecord<String, String>> records = new CopyOnWriteArrayList<>();
        KafkaConsumer<String, String> reader = readerOf(broker.bootstrapServers(), "cdc-outage");
        closeables.add(reader);

        f.append(messages("cdc-outage", 2, 10, "o1"));
        await().atMost(WAIT).until(() -> poll(reader, records) >= 20 && f.undispatched() == 0);
        assertThat(cdc.rowsSent())
                .as("sent through the log while the broker is up")
                .isEqualTo(20);

        broker.kill9();
        f.append(messages("cdc-outage", 2, 10, "o2"));
        // The order gate lets the engine claim each aggregate's first o2 row only: both fail.
        await().atMost(WAIT)
                .until(() -> f.jdbc.queryForObject(
                                "SELECT COUNT(*) FROM outbox WHERE dispatched_at IS NULL AND attempts > 0", Long.class)
                        == 2);
        await().atMost(WAIT).until(() -> cdc.rowsSeen() == 40);

        broker.start();
        broker.awaitReady(Duration.ofMinutes(2));
        dispatcher.start();
        await().atMost(WAIT).until(() -> poll(reader, records) >= 40 && f.undispatched() == 0);

        assertThat(cdc.rowsSent()).as("the outage's rows were sent by polling").isEqualTo(20);
        assertThat(cdc.lastFailure())
                .as("failed sends never stopped the engine")
                .isNull();
        assertThat(cdc.isStreaming()).isTrue();

        Map<String, Long> sends = sendsPerOutboxId(records);
        assertThat(sends).hasSize(40);
        assertThat(sends.values()).containsOnly(1L);
        assertInOrderPerAggregateAcross(records, "o1", "o2");
    }

    /** A consumer of {@code topic}'s one partition on {@code bootstrap}, from the beginning. */
    private static KafkaConsumer<String, String> readerOf(String bootstrap, String topic) {
        Map<String, Object> config = new HashMap<>();
        config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        config.put(ConsumerConfig.GROUP_ID_CONFIG, "cdc-outage-reader");
        config.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        config.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
        config.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
        KafkaConsumer<String, String> reader = new KafkaConsumer<>(config);
        reader.assign(List.of(new TopicPartition(topic, 0)));
        return reader;
    }

    /** Adds what {@code reader} has now to {@code records}; how many there are. */
    private static int poll(KafkaConsumer<String, String> reader, List<ConsumerRecord<String, String>> records) {
        reader.poll(Duration.ofMillis(200)).forEach(records::add);
        return records.size();
    }

    @Test
    void delayedRowsAndFailedSendsAreLeftToPolling() {
        Fixture f = new Fixture("delayed");
        Set<String> failing = ConcurrentHashMap.newKeySet();
        failing.add("cdc-failing");
        OutboxPublisher flaky = records -> {
            List<OutboxRecord> toSend = new ArrayList<>();
            Map<Long, Throwable> failures = new HashMap<>();
            for (OutboxRecord record : records) {
                if (failing.contains(record.topic())) {
                    failures.put(record.id(), new IllegalStateException("broker refused"));
                } else {
                    toSend.add(record);
                }
            }
            PublishResult sent = publisher.publish(toSend, Duration.ofSeconds(10));
            failures.putAll(sent.failures());
            return PublishResult.failed(failures);
        };
        OutboxDispatcher dispatcher = f.dispatcher(flaky);
        OutboxCdc cdc = f.cdc(dispatcher);
        f.startStreaming(cdc);

        long delayed = f.append(List.of(OutboxMessage.builder("agg-d", "cdc-delayed", "delayed:0:0")
                        .delay(Duration.ofSeconds(2))
                        .build()))
                .get(0);
        long failed = f.append(List.of(OutboxMessage.of("agg-f", "cdc-failing", "failed:0:0")))
                .get(0);
        long marker = f.append(List.of(OutboxMessage.of("agg-m", "cdc-delayed", "marker:0:0")))
                .get(0);
        await().atMost(WAIT).until(() -> receivedOn("cdc-delayed").size() >= 1);
        await().atMost(WAIT).until(() -> cdc.rowsSeen() >= 3);

        OutboxRecord delayedRow = f.table.find(delayed).orElseThrow();
        assertThat(delayedRow.dispatchedAt()).isNull();
        assertThat(delayedRow.attempts()).isZero();
        OutboxRecord failedRow = f.table.find(failed).orElseThrow();
        assertThat(failedRow.dispatchedAt()).isNull();
        assertThat(failedRow.attempts()).isEqualTo(1);
        assertThat(failedRow.lastError()).contains("broker refused");
        assertThat(f.table.find(marker).orElseThrow().dispatchedAt()).isNotNull();

        // Polling picks them up: the delayed row once due, the failed one once the broker takes it.
        failing.clear();
        f.jdbc.update("UPDATE outbox SET available_at = CURRENT_TIMESTAMP WHERE id = ?", failed);
        dispatcher.start();
        await().atMost(WAIT).until(() -> f.undispatched() == 0);
        await().atMost(WAIT)
                .until(() -> receivedOn("cdc-delayed").size() >= 2
                        && receivedOn("cdc-failing").size() >= 1);
        assertThat(receivedOn("cdc-delayed")).hasSize(2);
        assertThat(receivedOn("cdc-failing")).hasSize(1);
    }

    @Test
    void startFailsClearlyWithoutTheReplicationAttribute() {
        Fixture f = new Fixture("noreplication");
        LogicalPostgres.get().execute(f.url, "DROP ROLE IF EXISTS sumi_cdc_plain");
        LogicalPostgres.get().execute(f.url, "CREATE ROLE sumi_cdc_plain LOGIN NOREPLICATION");
        OutboxCdc cdc = OutboxCdc.builder(f.dispatcher(publisher), f.url)
                .user("sumi_cdc_plain")
                .slotName(f.slot)
                .build();
        assertThatThrownBy(cdc::start)
                .isInstanceOf(CdcSetupException.class)
                .hasMessageContaining("REPLICATION")
                .hasMessageContaining("ALTER ROLE sumi_cdc_plain WITH REPLICATION");
    }

    @Test
    void startFailsClearlyWhenWalLevelIsNotLogical() throws Exception {
        // The machine's shared server runs wal_level = replica (docs: ENVIRONMENT.md).
        String url =
                System.getenv().getOrDefault("SUMI_CDC_REPLICA_PG_URL", "jdbc:postgresql://127.0.0.1:5432/postgres");
        try (Connection connection = DriverManager.getConnection(url, "postgres", "");
                var statement = connection.createStatement();
                var rs = statement.executeQuery("SHOW wal_level")) {
            rs.next();
            assertThat(rs.getString(1))
                    .as("the server at %s must not run wal_level=logical", url)
                    .isNotEqualTo("logical");
            assertThatThrownBy(() -> CdcSetup.requireLogicalWal(connection))
                    .isInstanceOf(CdcSetupException.class)
                    .hasMessageContaining("wal_level = logical")
                    .hasMessageContaining("replica");
        }
    }
}
