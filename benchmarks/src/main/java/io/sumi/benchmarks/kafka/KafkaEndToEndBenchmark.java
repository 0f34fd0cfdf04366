package io.sumi.benchmarks.kafka;

import io.sumi.benchmarks.BenchOptions;
import io.sumi.testing.KafkaBrokerProcess;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.StringSerializer;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * End-to-end Kafka benchmark (docs/benchmarks.md, "End to end: Kafka listeners"): a real broker JVM,
 * PostgreSQL, and per case a Spring Boot application with Sumi's starter and one
 * {@code @KafkaListener} (3 consumer threads), in one run, ratios to the bare listener.
 *
 * <p>Per duplicate rate (0 % and 30 %), {@code --records} records of ~200 bytes are produced once to
 * a 6-partition drain topic; a record is a duplicate when it repeats the key (the {@code outbox-id}
 * header) of one of the 2,000 records before it. Each case then starts its application with a new
 * consumer group and an empty ledger and measures:
 * <ul>
 *   <li>drain: the backlog consumed from the first handler call to the last, as records/s (every
 *   record, duplicates included, counts);</li>
 *   <li>latency: {@code --paced-rate} records/s for {@code --paced-seconds} to a topic of the case's
 *   own, each record's handler start minus its producer timestamp, p50 and p99 (duplicates are
 *   not run, so not measured).</li>
 * </ul>
 *
 * <p>Options ({@code --name=value}): {@code records} (200000), {@code paced-rate} (1000),
 * {@code paced-seconds} (10), {@code cases} (all: bare, bare-work, hand-rolled, hand-rolled-work,
 * spring-integration, spring-integration-work, record-tx, record-tx-work, record-lease,
 * record-lease-poll, record-lease-poll-work, record-lease-poll-async, record-lease-redis,
 * record-lease-poll-redis, batch-lease, batch-tx; {@code -work}: the handler also inserts a row, see
 * {@link BenchListeners}; {@code -redis}: the same case on the Redis ledger at {@code redis}), {@code duplicates}
 * (0,30,30x: {@code x}, each copy on another partition within 10 records of its original), {@code jdbc-url}
 * (jdbc:postgresql://127.0.0.1:5432/sumi_bench_kafka; created if missing), {@code redis}
 * (127.0.0.1:6379: the Redis of the {@code -redis} cases), {@code jdbc-user}
 * (postgres), {@code jdbc-password} (empty), {@code broker-heap} (512m), {@code warmup-records} (10000: an
 * unmeasured drain by the bare, record-lease-poll and batch-lease cases first, so that the first
 * measured case does not pay for the JVM's warm-up).
 */
public final class KafkaEndToEndBenchmark {

    private static final List<String> ALL_CASES = List.of(
            "bare",
            "bare-work",
            "hand-rolled",
            "hand-rolled-work",
            "spring-integration",
            "spring-integration-work",
            "record-tx",
            "record-tx-work",
            "record-lease",
            "record-lease-poll",
            "record-lease-poll-work",
            "record-lease-poll-async",
            "record-lease-redis",
            "record-lease-poll-redis",
            "batch-lease",
            "batch-tx");
    /** The cases without Sumi: their listener runs for every record, duplicates included. */
    private static final Set<String> WITHOUT_SUMI = Set.of("bare", "hand-rolled", "spring-integration");

    private static final String WORK = "-work";
    /** A Sumi case's suffix for the same listener on the Redis ledger ({@code sumi.ledger.store=redis}). */
    private static final String REDIS = "-redis";

    private static final int PARTITIONS = 6;
    private static final int DUPLICATE_WINDOW = 2_000;
    /** The "x" shape: a copy repeats one of the records this close before it, on another partition. */
    private static final int CROSS_PARTITION_WINDOW = 10;

    private final Map<String, String> options;
    private final int records;
    private final int pacedRate;
    private final int pacedSeconds;

    private KafkaEndToEndBenchmark(Map<String, String> options) {
        this.options = options;
        this.records = Integer.parseInt(options.getOrDefault("records", "200000"));
        this.pacedRate = Integer.parseInt(options.getOrDefault("paced-rate", "1000"));
        this.pacedSeconds = Integer.parseInt(options.getOrDefault("paced-seconds", "10"));
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> options = BenchOptions.parse("KafkaEndToEndBenchmark", args);
        new KafkaEndToEndBenchmark(options).run();
        System.exit(0);
    }

    /** {@code repeatedEffects}: work rows beyond one per distinct drain key, or -1 for a case without work. */
    private record Result(
            String name, String duplicates, double recordsPerSecond, long p50, long p99, long repeatedEffects) {}

    /**
     * A duplicate rate, {@code "30"}, or {@code "30x"}: each copy on another partition than the
     * record whose key it repeats, within {@link #CROSS_PARTITION_WINDOW} records of it (the
     * outbox's resends do that).
     */
    private record Shape(int percent, boolean crossPartition) {

        static Shape parse(String text) {
            String trimmed = text.trim();
            boolean cross = trimmed.endsWith("x");
            return new Shape(Integer.parseInt(cross ? trimmed.substring(0, trimmed.length() - 1) : trimmed), cross);
        }

        String label() {
            return percent + (crossPartition ? "x" : "");
        }
    }

    private void run() throws Exception {
        List<String> cases = List.of(
                options.getOrDefault("cases", String.join(",", ALL_CASES)).split(","));
        List<Shape> duplicateRates = new ArrayList<>();
        for (String rate : options.getOrDefault("duplicates", "0,30,30x").split(",", -1)) {
            duplicateRates.add(Shape.parse(rate));
        }
        String url = options.getOrDefault("jdbc-url", "jdbc:postgresql://127.0.0.1:5432/sumi_bench_kafka");
        String user = options.getOrDefault("jdbc-user", "postgres");
        String password = options.getOrDefault("jdbc-password", "");
        ensureDatabase(url, user, password);

        Path dir = Files.createTempDirectory("sumi-kafka-bench");
        List<Result> results = new ArrayList<>();
        Instant started = Instant.now();
        try (KafkaBrokerProcess broker =
                KafkaBrokerProcess.onThisClasspath(dir, options.getOrDefault("broker-heap", "512m"))) {
            broker.formatAndStart(Duration.ofMinutes(5));
            System.out.printf(
                    Locale.ROOT,
                    "broker up at %s (%s); %d records per drain, paced %d/s for %d s%n",
                    broker.bootstrapServers(),
                    dir,
                    records,
                    pacedRate,
                    pacedSeconds);
            int warmup = Integer.parseInt(options.getOrDefault("warmup-records", "10000"));
            if (warmup > 0) {
                // Unmeasured: the JIT and the connection pools of this JVM warm up before the first measured case.
                broker.createTopic("warmup", PARTITIONS);
                long distinct = produce(broker, "warmup", warmup, new Shape(30, false), 0, "w-");
                List<String> warmupCases = new ArrayList<>(List.of("bare", "record-lease-poll", "batch-lease"));
                if (cases.stream().anyMatch(name -> name.endsWith(REDIS))) {
                    warmupCases.add("record-lease-poll" + REDIS); // Lettuce's connections and event loops
                }
                for (String name : warmupCases) {
                    runCase(broker, url, user, password, name, new Shape(30, false), "warmup", warmup, distinct, null);
                }
            }
            for (Shape duplicates : duplicateRates) {
                String drainTopic = "drain-d" + duplicates.label();
                broker.createTopic(drainTopic, PARTITIONS);
                long distinct = produce(broker, drainTopic, records, duplicates, 0, drainPrefix(duplicates));
                for (String name : cases) {
                    String pacedTopic = Recorder.LATENCY_TOPIC_PREFIX + name + "-d" + duplicates.label();
                    broker.createTopic(pacedTopic, PARTITIONS);
                    results.add(runCase(
                            broker, url, user, password, name, duplicates, drainTopic, records, distinct, pacedTopic));
                }
            }
        }
        print(results, started);
    }

    // The application context is a guard: try-with-resources closes it; the body never names it.
    @SuppressWarnings("try")
    private Result runCase(
            KafkaBrokerProcess broker,
            String url,
            String user,
            String password,
            String name,
            Shape duplicates,
            String drainTopic,
            int drainCount,
            long distinctInDrain,
            @Nullable String pacedTopic)
            throws Exception {
        truncateTables(url, user, password);
        int pacedTotal = pacedRate * pacedSeconds;
        Recorder.reset(pacedTotal);
        boolean redis = name.endsWith(REDIS);
        String base = redis ? name.substring(0, name.length() - REDIS.length()) : name;
        boolean work = base.endsWith(WORK);
        String listener = work ? base.substring(0, base.length() - WORK.length()) : base;
        boolean sumi = !WITHOUT_SUMI.contains(listener);
        Map<String, Object> properties = new LinkedHashMap<>();
        boolean pollClaim = listener.startsWith("record-lease-poll");
        properties.put("bench.listener", pollClaim ? "record-lease" : listener);
        properties.put("bench.work", work);
        properties.put("bench.topics", pacedTopic == null ? drainTopic : drainTopic + "," + pacedTopic);
        properties.put("bench.group", "bench-" + name + "-" + drainTopic);
        properties.put("sumi.kafka.poll-claim", pollClaim);
        properties.put("sumi.ledger.asynchronous-claim-commit", name.endsWith("-async"));
        properties.put("spring.kafka.bootstrap-servers", broker.bootstrapServers());
        properties.put("spring.kafka.consumer.auto-offset-reset", "earliest");
        properties.put(
                "spring.kafka.consumer.key-deserializer", "org.apache.kafka.common.serialization.StringDeserializer");
        properties.put(
                "spring.kafka.consumer.value-deserializer", "org.apache.kafka.common.serialization.StringDeserializer");
        properties.put("spring.kafka.listener.concurrency", 3);
        properties.put("spring.datasource.url", url);
        properties.put("spring.datasource.username", user);
        properties.put("spring.datasource.password", password);
        properties.put("spring.datasource.hikari.maximum-pool-size", 6);
        properties.put("spring.flyway.locations", "classpath:db/sumi/{vendor}");
        properties.put("sumi.ledger.pruning.enabled", false);
        if (redis) {
            String[] hostPort = options.getOrDefault("redis", "127.0.0.1:6379").split(":", 2);
            properties.put("sumi.ledger.store", "redis");
            properties.put("spring.data.redis.host", hostPort[0]);
            properties.put("spring.data.redis.port", hostPort[1]);
            // A ledger of the case's own, as the truncated table is for the JDBC cases; it expires.
            properties.put("sumi.ledger.redis.prefix", "sumi-bench-e2e:" + UUID.randomUUID());
            properties.put("sumi.ledger.retention", "30m");
        }
        // Spring Modulith is on the benchmarks' class path (the outbox comparison); its registry needs its table.
        properties.put("spring.modulith.events.jdbc.schema-initialization.enabled", true);
        long expectedDrain = sumi ? distinctInDrain : drainCount;
        System.out.printf(Locale.ROOT, "%-23s d%-3s %s starting...%n", name, duplicates.label(), drainTopic);
        try (AutovacuumStandIn autovacuum = AutovacuumStandIn.startIfOff(url, user, password);
                ConfigurableApplicationContext context = new SpringApplicationBuilder(BenchListeners.class)
                        .web(WebApplicationType.NONE)
                        .properties(properties)
                        .run()) {
            awaitCount(Recorder::drained, expectedDrain, Duration.ofMinutes(20), name + " drain");
            double seconds = Recorder.drainSeconds();
            if (pacedTopic == null) {
                return new Result(name, duplicates.label(), drainCount / seconds, -1, -1, -1);
            }
            long pacedDistinct = produce(broker, pacedTopic, pacedTotal, duplicates, pacedRate, "p-" + name + "-");
            long expectedPaced = sumi ? pacedDistinct : pacedTotal;
            awaitCount(() -> Recorder.paced(), expectedPaced, Duration.ofMinutes(5), name + " paced");
            Result result = new Result(
                    name,
                    duplicates.label(),
                    drainCount / seconds,
                    Recorder.latencyPercentile(50),
                    Recorder.latencyPercentile(99),
                    // The drain ended long before the paced phase did, so its work is committed by now.
                    work ? repeatedEffects(url, user, password, drainPrefix(duplicates), distinctInDrain) : -1);
            System.out.printf(
                    Locale.ROOT,
                    "%-23s d%-3s %,10.0f records/s  p50 %d ms  p99 %d ms%s%n",
                    name,
                    duplicates.label(),
                    result.recordsPerSecond(),
                    result.p50(),
                    result.p99(),
                    work ? "  repeated effects " + result.repeatedEffects() : "");
            return result;
        }
    }

    /**
     * Produces {@code count} records of ~200 bytes; {@code duplicates} % of them repeat the key of
     * one of the records before them (the Kafka key is the idempotency key, so a copy lands on the
     * partition of its original), or, for the cross-partition shape, of one of the
     * {@link #CROSS_PARTITION_WINDOW} records before them, sent to another partition than that
     * record's. {@code rate} records/s, or as fast as possible if 0.
     *
     * @return how many distinct keys were sent
     */
    private static long produce(
            KafkaBrokerProcess broker, String topic, int count, Shape duplicates, int rate, String prefix)
            throws Exception {
        Map<String, Object> config = Map.of(
                ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
                broker.bootstrapServers(),
                ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG,
                StringSerializer.class,
                ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG,
                StringSerializer.class,
                ProducerConfig.LINGER_MS_CONFIG,
                rate == 0 ? 5 : 0,
                ProducerConfig.ACKS_CONFIG,
                "1");
        Random random = new Random(42 + duplicates.percent() + (duplicates.crossPartition() ? 1000 : 0));
        List<String> keys = new ArrayList<>(count);
        List<Integer> partitions = new ArrayList<>(count);
        int window = duplicates.crossPartition() ? CROSS_PARTITION_WINDOW : DUPLICATE_WINDOW;
        Set<String> distinct = new HashSet<>();
        long start = System.nanoTime();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(config)) {
            for (int i = 0; i < count; i++) {
                int original = !keys.isEmpty() && random.nextInt(100) < duplicates.percent()
                        ? keys.size() - 1 - random.nextInt(Math.min(window, keys.size()))
                        : -1;
                String key = original >= 0 ? keys.get(original) : prefix + i;
                // Cross-partition: records go round the partitions; a copy skips its original's.
                int partition = original >= 0
                        ? (partitions.get(original) + 1 + random.nextInt(PARTITIONS - 1)) % PARTITIONS
                        : i % PARTITIONS;
                keys.add(key);
                partitions.add(partition);
                distinct.add(key);
                ProducerRecord<String, String> record = duplicates.crossPartition()
                        ? new ProducerRecord<>(topic, partition, key, payload(random))
                        : new ProducerRecord<>(topic, key, payload(random));
                record.headers().add("outbox-id", key.getBytes(StandardCharsets.UTF_8));
                // A load generator does not wait per send: flush() below waits for them all.
                Future<RecordMetadata> unused = producer.send(record);
                if (rate > 0) {
                    long due = start + (long) ((i + 1) * 1e9 / rate);
                    long wait = due - System.nanoTime();
                    if (wait > 0) {
                        TimeUnit.NANOSECONDS.sleep(wait);
                    }
                }
            }
            producer.flush();
        }
        return distinct.size();
    }

    private static String payload(Random random) {
        char[] chars = new char[200];
        for (int i = 0; i < chars.length; i++) {
            chars[i] = (char) ('a' + random.nextInt(26));
        }
        return new String(chars);
    }

    private static void awaitCount(java.util.function.LongSupplier count, long expected, Duration timeout, String what)
            throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (count.getAsLong() < expected) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException(
                        what + ": " + count.getAsLong() + " of " + expected + " records after " + timeout);
            }
            Thread.sleep(20);
        }
    }

    private static void ensureDatabase(String url, String user, String password) throws SQLException {
        try {
            DriverManager.getConnection(url, user, password).close();
        } catch (SQLException ex) {
            if (!"3D000".equals(ex.getSQLState())) {
                throw ex;
            }
            String name = url.substring(url.lastIndexOf('/') + 1).replaceAll("\\?.*", "");
            if (!name.matches("[A-Za-z_][A-Za-z0-9_]*")) {
                throw new IllegalArgumentException("Refusing to create a database named '" + name + "'");
            }
            try (Connection c = DriverManager.getConnection(
                            url.substring(0, url.lastIndexOf('/') + 1) + "postgres", user, password);
                    Statement s = c.createStatement()) {
                s.execute("CREATE DATABASE " + name);
            }
        }
    }

    private static String drainPrefix(Shape duplicates) {
        return "d" + duplicates.label() + "-";
    }

    /**
     * Empties Sumi's ledger (Flyway creates it in the first case) and the tables of the work and of
     * the alternatives, creating those in a schema {@code bench} of their own (Flyway refuses to
     * start on a non-empty {@code public} without its history): the work's rows, the write-up's
     * {@code processed_messages}, and Spring Integration's metadata store (from its
     * {@code schema-postgresql.sql}). Those are not analyzed empty: a generic plan made for an
     * analyzed empty table reads the whole table until the stand-in's first {@code ANALYZE}, and a
     * new table in production is planned before its first analysis as after a {@code TRUNCATE}.
     * Sumi's ledger keeps the analyzed-empty start its published figures were taken with (see
     * "Without autovacuum" in docs/benchmarks.md), which can only make Sumi's cases slower.
     */
    private static void truncateTables(String url, String user, String password) throws SQLException {
        try (Connection c = DriverManager.getConnection(url, user, password);
                Statement s = c.createStatement()) {
            s.execute("CREATE SCHEMA IF NOT EXISTS bench");
            s.execute("CREATE TABLE IF NOT EXISTS bench.work (id BIGSERIAL PRIMARY KEY,"
                    + " message_key VARCHAR(255) NOT NULL, payload TEXT NOT NULL)");
            s.execute("CREATE TABLE IF NOT EXISTS bench.processed_messages (id VARCHAR(255) PRIMARY KEY,"
                    + " processed_at TIMESTAMPTZ NOT NULL)");
            s.execute("CREATE TABLE IF NOT EXISTS bench.INT_METADATA_STORE (METADATA_KEY VARCHAR(255) NOT NULL,"
                    + " METADATA_VALUE VARCHAR(4000), REGION VARCHAR(100) NOT NULL,"
                    + " CONSTRAINT INT_METADATA_STORE_PK PRIMARY KEY (METADATA_KEY, REGION))");
            s.execute("TRUNCATE bench.work, bench.processed_messages, bench.INT_METADATA_STORE");
            s.execute("DO $$ BEGIN IF to_regclass('processed_messages') IS NOT NULL THEN"
                    + " TRUNCATE processed_messages; ANALYZE processed_messages; END IF; END $$");
        }
    }

    /** Work rows of the drain beyond one per distinct key: effects that ran twice; fails on a lost one. */
    private static long repeatedEffects(String url, String user, String password, String prefix, long distinct)
            throws SQLException {
        try (Connection c = DriverManager.getConnection(url, user, password);
                var statement = c.prepareStatement(
                        "SELECT count(*), count(DISTINCT message_key) FROM bench.work WHERE message_key LIKE ?")) {
            statement.setString(1, prefix + "%");
            try (var rows = statement.executeQuery()) {
                rows.next();
                long effects = rows.getLong(1);
                long keys = rows.getLong(2);
                if (keys != distinct) {
                    throw new IllegalStateException(
                            "work done for " + keys + " of " + distinct + " distinct keys: a key's effect is missing");
                }
                return effects - keys;
            }
        }
    }

    private void print(List<Result> results, Instant started) {
        System.out.println();
        System.out.printf(
                Locale.ROOT,
                "%d records of ~200 bytes, %d partitions, 3 consumer threads; paced %d records/s for %d s; run %s, %d s%n%n",
                records,
                PARTITIONS,
                pacedRate,
                pacedSeconds,
                started,
                Duration.between(started, Instant.now()).toSeconds());
        System.out.println(
                "| case | duplicates | records/s | × bare | × hand-rolled | × spring-integration | × on PostgreSQL | p50 ms | p99 ms | repeated effects |");
        System.out.println("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
        for (Result result : results) {
            System.out.printf(
                    Locale.ROOT,
                    "| %s | %s %% | %,.0f | %s | %s | %s | %s | %d | %d | %s |%n",
                    result.name(),
                    result.duplicates(),
                    result.recordsPerSecond(),
                    ratio(results, result, "bare"),
                    ratio(results, result, "hand-rolled"),
                    ratio(results, result, "spring-integration"),
                    result.name().endsWith(REDIS)
                            ? ratioTo(
                                    results,
                                    result,
                                    result.name().substring(0, result.name().length() - REDIS.length()))
                            : "",
                    result.p50(),
                    result.p99(),
                    result.repeatedEffects() < 0 ? "" : Long.toString(result.repeatedEffects()));
        }
    }

    /**
     * {@code result}'s rate over the {@code baseline} case's at the same duplicates, like with like:
     * a case with the work against the baseline with the work ({@code bare-work} for {@code bare}).
     * Blank if that case did not run.
     */
    private static String ratio(List<Result> results, Result result, String baseline) {
        return ratioTo(results, result, result.name().endsWith(WORK) ? baseline + WORK : baseline);
    }

    /** {@code result}'s rate over case {@code against}'s at the same duplicates; blank if it did not run. */
    private static String ratioTo(List<Result> results, Result result, String against) {
        return results.stream()
                .filter(r -> r.name().equals(against) && r.duplicates().equals(result.duplicates()))
                .findFirst()
                .map(r -> String.format(Locale.ROOT, "%.2f", result.recordsPerSecond() / r.recordsPerSecond()))
                .orElse("");
    }
}
