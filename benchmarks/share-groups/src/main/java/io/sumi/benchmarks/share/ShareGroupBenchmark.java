package io.sumi.benchmarks.share;

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
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringSerializer;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The share-group benchmark (docs/benchmarks.md, "Share groups"): a broker JVM (Kafka 4.2, share
 * groups on), PostgreSQL, and per case a Spring Boot application with Sumi's starter, the share
 * binder and one share-group {@code @KafkaListener} of 3 consumers, in one run, ratios to the case
 * without Sumi.
 *
 * <p>Per duplicate rate (0 % and 30 %), {@code --records} records of ~200 bytes are produced once to
 * a 6-partition topic; a duplicate repeats the key (the {@code outbox-id} header and the Kafka key,
 * so the copy is on its original's partition) of one of the 2,000 records before it. Each case reads
 * it with a new share group (from the earliest offset) and an empty ledger, and measures the drain
 * (records/s, duplicates included, from the first handler call to the last) and the latency of
 * {@code --paced-rate} records/s for {@code --paced-seconds} on a topic of its own (handler start
 * minus producer timestamp, p50 and p99).
 *
 * <p>Options ({@code --name=value}): {@code records} (20000), {@code paced-rate} (500), {@code
 * paced-seconds} (10), {@code cases} (bare,lease,tx), {@code duplicates} (0,30), {@code
 * max-poll-records} (500, the client's default), {@code jdbc-url}
 * (jdbc:postgresql://127.0.0.1:5432/sumi_bench_share; created if missing), {@code jdbc-user}
 * (postgres), {@code jdbc-password} (empty), {@code broker-heap} (512m), {@code warmup-records}
 * (5000: an unmeasured drain by each case first).
 */
public final class ShareGroupBenchmark {

    private static final int PARTITIONS = 6;
    private static final int CONSUMERS = 3;
    private static final int DUPLICATE_WINDOW = 2_000;

    private final Map<String, String> options;
    private final int records;
    private final int pacedRate;
    private final int pacedSeconds;
    private int groups;

    private ShareGroupBenchmark(Map<String, String> options) {
        this.options = options;
        this.records = Integer.parseInt(options.getOrDefault("records", "20000"));
        this.pacedRate = Integer.parseInt(options.getOrDefault("paced-rate", "500"));
        this.pacedSeconds = Integer.parseInt(options.getOrDefault("paced-seconds", "10"));
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> options = new LinkedHashMap<>();
        for (String arg : args) {
            int eq = arg.indexOf('=');
            if (!arg.startsWith("--") || eq < 0) {
                System.err.println(
                        "Usage: ShareGroupBenchmark [--name=value ...]; see the class comment (got " + arg + ")");
                System.exit(2);
            }
            options.put(arg.substring(2, eq), arg.substring(eq + 1));
        }
        new ShareGroupBenchmark(options).run();
        System.exit(0);
    }

    private record Result(String name, int duplicates, double recordsPerSecond, long p50, long p99) {}

    private void run() throws Exception {
        List<String> cases =
                List.of(options.getOrDefault("cases", "bare,lease,tx").split(","));
        String url = options.getOrDefault("jdbc-url", "jdbc:postgresql://127.0.0.1:5432/sumi_bench_share");
        String user = options.getOrDefault("jdbc-user", "postgres");
        String password = options.getOrDefault("jdbc-password", "");
        ensureDatabase(url, user, password);
        Path dir = Files.createTempDirectory("sumi-share-bench");
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
            int warmup = Integer.parseInt(options.getOrDefault("warmup-records", "5000"));
            if (warmup > 0) {
                broker.createTopic("warmup", PARTITIONS);
                long distinct = produce(broker, "warmup", warmup, 30, 0, "w-");
                for (String name : cases) {
                    runCase(broker, url, user, password, name, 30, "warmup", warmup, distinct, null);
                }
            }
            for (String rate : options.getOrDefault("duplicates", "0,30").split(",", -1)) {
                int duplicates = Integer.parseInt(rate.trim());
                String drainTopic = "drain-d" + duplicates;
                broker.createTopic(drainTopic, PARTITIONS);
                long distinct = produce(broker, drainTopic, records, duplicates, 0, "d" + duplicates + "-");
                for (String name : cases) {
                    String pacedTopic = ShareRecorder.PACED_TOPIC_PREFIX + name + "-d" + duplicates;
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
            int duplicates,
            String drainTopic,
            int drainCount,
            long distinctInDrain,
            String pacedTopic)
            throws Exception {
        truncateLedger(url, user, password);
        int pacedTotal = pacedRate * pacedSeconds;
        ShareRecorder.reset(pacedTotal);
        groups++;
        String group = "bench-" + name + "-" + drainTopic + "-" + groups;
        fromEarliest(broker, group);
        boolean sumi = !"bare".equals(name);
        Map<String, Object> properties = new LinkedHashMap<>();
        properties.put("bench.listener", name);
        properties.put("bench.topics", pacedTopic == null ? drainTopic : drainTopic + "," + pacedTopic);
        properties.put("bench.group", group);
        properties.put("bench.consumers", CONSUMERS);
        properties.put("bench.max-poll-records", options.getOrDefault("max-poll-records", "500"));
        properties.put("spring.kafka.bootstrap-servers", broker.bootstrapServers());
        properties.put("spring.datasource.url", url);
        properties.put("spring.datasource.username", user);
        properties.put("spring.datasource.password", password);
        properties.put("spring.datasource.hikari.maximum-pool-size", 6);
        properties.put("spring.flyway.locations", "classpath:db/sumi/{vendor}");
        properties.put("spring.main.banner-mode", "off");
        properties.put("sumi.ledger.pruning.enabled", false);
        properties.put("sumi.outbox.dispatcher.enabled", false);
        long expectedDrain = sumi ? distinctInDrain : drainCount;
        System.out.printf(Locale.ROOT, "%-6s d%-3d %s starting...%n", name, duplicates, drainTopic);
        try (ConfigurableApplicationContext context = new SpringApplicationBuilder(ShareBenchApp.class)
                .web(WebApplicationType.NONE)
                .properties(properties)
                .run()) {
            awaitCount(ShareRecorder::drained, expectedDrain, Duration.ofMinutes(20), name + " drain");
            double seconds = ShareRecorder.drainSeconds();
            if (pacedTopic == null) {
                return new Result(name, duplicates, drainCount / seconds, -1, -1);
            }
            long pacedDistinct = produce(broker, pacedTopic, pacedTotal, duplicates, pacedRate, "p-" + group + "-");
            awaitCount(ShareRecorder::paced, sumi ? pacedDistinct : pacedTotal, Duration.ofMinutes(5), name + " paced");
            Result result = new Result(
                    name,
                    duplicates,
                    drainCount / seconds,
                    ShareRecorder.latencyPercentile(50),
                    ShareRecorder.latencyPercentile(99));
            System.out.printf(
                    Locale.ROOT,
                    "%-6s d%-3d %,10.0f records/s  p50 %d ms  p99 %d ms%n",
                    name,
                    duplicates,
                    result.recordsPerSecond(),
                    result.p50(),
                    result.p99());
            return result;
        }
    }

    /** A new share group starts at the latest offset: each case's reads the backlog from the first record. */
    private static void fromEarliest(KafkaBrokerProcess broker, String group) throws Exception {
        try (Admin admin = broker.admin()) {
            Map<ConfigResource, Collection<AlterConfigOp>> configs = new HashMap<>();
            configs.put(
                    new ConfigResource(ConfigResource.Type.GROUP, group),
                    List.of(new AlterConfigOp(
                            new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET)));
            admin.incrementalAlterConfigs(configs).all().get(30, TimeUnit.SECONDS);
        }
    }

    /**
     * Produces {@code count} records of ~200 bytes, {@code duplicates} % of them repeating the key of
     * one of the {@link #DUPLICATE_WINDOW} records before them, {@code rate} records/s (0: as fast as
     * possible). Returns how many distinct keys were sent.
     */
    private static long produce(
            KafkaBrokerProcess broker, String topic, int count, int duplicates, int rate, String prefix)
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
        Random random = new Random(42 + duplicates);
        List<String> keys = new ArrayList<>(count);
        // A copy carries its original's payload, as a redelivery or an outbox resend does: a new
        // payload under a used key is another message (Sumi warns on it), not a duplicate.
        Map<String, String> payloads = new HashMap<>();
        long start = System.nanoTime();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(config)) {
            for (int i = 0; i < count; i++) {
                String key = !keys.isEmpty() && random.nextInt(100) < duplicates
                        ? keys.get(keys.size() - 1 - random.nextInt(Math.min(DUPLICATE_WINDOW, keys.size())))
                        : prefix + i;
                keys.add(key);
                String payload = payloads.computeIfAbsent(key, unused -> payload(random));
                ProducerRecord<String, String> record = new ProducerRecord<>(topic, key, payload);
                record.headers().add("outbox-id", key.getBytes(StandardCharsets.UTF_8));
                // A load generator does not wait per send: flush() below waits for them all.
                Future<RecordMetadata> unused = producer.send(record);
                if (rate > 0) {
                    long wait = start + (long) ((i + 1) * 1e9 / rate) - System.nanoTime();
                    if (wait > 0) {
                        TimeUnit.NANOSECONDS.sleep(wait);
                    }
                }
            }
            producer.flush();
        }
        return payloads.size();
    }

    private static String payload(Random random) {
        char[] chars = new char[200];
        for (int i = 0; i < chars.length; i++) {
            chars[i] = (char) ('a' + random.nextInt(26));
        }
        return new String(chars);
    }

    private static void awaitCount(LongSupplier count, long expected, Duration timeout, String what)
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

    /** Empties Sumi's ledger (Flyway creates it in the first case's context). */
    private static void truncateLedger(String url, String user, String password) throws SQLException {
        try (Connection c = DriverManager.getConnection(url, user, password);
                Statement s = c.createStatement()) {
            s.execute("DO $$ BEGIN IF to_regclass('processed_messages') IS NOT NULL THEN"
                    + " TRUNCATE processed_messages; ANALYZE processed_messages; END IF; END $$");
        }
    }

    private void print(List<Result> results, Instant started) {
        System.out.println();
        System.out.printf(
                Locale.ROOT,
                "%d records of ~200 bytes, %d partitions, one share group of %d consumers; paced %d records/s for %d s;"
                        + " run %s, %d s%n%n",
                records,
                PARTITIONS,
                CONSUMERS,
                pacedRate,
                pacedSeconds,
                started,
                Duration.between(started, Instant.now()).toSeconds());
        System.out.println("| case | duplicates | records/s | × bare | p50 ms | p99 ms |");
        System.out.println("| --- | ---: | ---: | ---: | ---: | ---: |");
        for (Result result : results) {
            String ratio = results.stream()
                    .filter(r -> r.name().equals("bare") && r.duplicates() == result.duplicates())
                    .findFirst()
                    .map(r -> String.format(Locale.ROOT, "%.2f", result.recordsPerSecond() / r.recordsPerSecond()))
                    .orElse("");
            System.out.printf(
                    Locale.ROOT,
                    "| %s | %d %% | %,.0f | %s | %d | %d |%n",
                    result.name(),
                    result.duplicates(),
                    result.recordsPerSecond(),
                    ratio,
                    result.p50(),
                    result.p99());
        }
    }
}
