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
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import java.util.function.ToDoubleFunction;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.admin.ShareMemberDescription;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.GroupIdNotFoundException;
import org.apache.kafka.common.serialization.StringSerializer;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The share-group benchmark (docs/benchmarks.md, "Share groups"): a broker JVM (Kafka 4.2, share
 * groups on), PostgreSQL, and per case a Spring Boot application with Sumi's starter, the share
 * binder and one share-group {@code @KafkaListener} of 3 consumers, in one run, ratios to the case
 * without Sumi.
 *
 * <p>Per round and duplicate rate (0 % and 30 %), each case gets a 6-partition topic of its own and a
 * new share group (from the earliest offset) on it and an empty ledger. Its application starts on
 * the empty topic, and only once the group has all its members, each with its partitions (as the
 * group coordinator describes it), are {@code --records} records of ~200 bytes produced, as fast as
 * the producer goes, while the records wait at a gate before Sumi ({@link ShareGate}); the gate
 * opens a second after the last one is written, and the drain is timed from the first handler call
 * to the last: neither the members' join nor the producer's pace is in it. A duplicate repeats the key (the {@code outbox-id} header and the Kafka key, so
 * the copy is on its original's partition) of one of the 2,000 records before it; every case gets
 * the same sequence. Then {@code --paced-rate} records/s for {@code --paced-seconds} on the same
 * topic, keys of their own (handler start minus producer timestamp, p50 and p99). The rounds go round-robin over the
 * cases; the table gives each case's median of the rounds, its spread (lowest and highest), and the
 * ratio of the medians.
 *
 * <p>Options ({@code --name=value}): {@code records} (20000), {@code paced-rate} (500), {@code
 * paced-seconds} (10), {@code cases} (bare,lease,tx), {@code duplicates} (0,30), {@code rounds} (3),
 * {@code max-poll-records} (500, the client's default), {@code jdbc-url}
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
    private final int rounds;
    private int groups;

    private ShareGroupBenchmark(Map<String, String> options) {
        this.options = options;
        this.records = Integer.parseInt(options.getOrDefault("records", "20000"));
        this.pacedRate = Integer.parseInt(options.getOrDefault("paced-rate", "500"));
        this.pacedSeconds = Integer.parseInt(options.getOrDefault("paced-seconds", "10"));
        this.rounds = Integer.parseInt(options.getOrDefault("rounds", "3"));
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
                for (String name : cases) {
                    runCase(broker, url, user, password, name, 30, warmup, "warmup-" + name, false);
                }
            }
            for (int round = 1; round <= rounds; round++) {
                for (String rate : options.getOrDefault("duplicates", "0,30").split(",", -1)) {
                    int duplicates = Integer.parseInt(rate.trim());
                    for (String name : cases) {
                        results.add(runCase(
                                broker,
                                url,
                                user,
                                password,
                                name,
                                duplicates,
                                records,
                                name + "-d" + duplicates + "-r" + round,
                                true));
                    }
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
            int drainCount,
            String topicSuffix,
            boolean paced)
            throws Exception {
        truncateLedger(url, user, password);
        int pacedTotal = pacedRate * pacedSeconds;
        ShareRecorder.reset(pacedTotal);
        groups++;
        String drainTopic = "drain-" + topicSuffix;
        broker.createTopic(drainTopic, PARTITIONS);
        String group = "bench-" + topicSuffix + "-" + groups;
        fromEarliest(broker, group);
        boolean sumi = !"bare".equals(name);
        Map<String, Object> properties = new LinkedHashMap<>();
        properties.put("bench.listener", name);
        properties.put("bench.topics", drainTopic);
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
        System.out.printf(Locale.ROOT, "%-6s d%-3d %s starting...%n", name, duplicates, drainTopic);
        try (ConfigurableApplicationContext context = new SpringApplicationBuilder(ShareBenchApp.class)
                .web(WebApplicationType.NONE)
                .properties(properties)
                .run()) {
            Duration joined = awaitMembers(broker, group, drainTopic);
            long producing = System.nanoTime();
            long distinct = produce(broker, drainTopic, drainCount, duplicates, 0, "d" + duplicates + "-");
            double produced = (System.nanoTime() - producing) / 1e9;
            Thread.sleep(1_000); // each consumer's first fetch of the backlog waits at the gate
            ShareRecorder.openGate();
            awaitCount(ShareRecorder::drained, sumi ? distinct : drainCount, Duration.ofMinutes(20), name + " drain");
            double recordsPerSecond = drainCount / ShareRecorder.drainSeconds();
            System.out.printf(
                    Locale.ROOT,
                    "%-6s d%-3d members assigned after %d ms; drain produced in %.2f s (%,.0f records/s)%n",
                    name,
                    duplicates,
                    joined.toMillis(),
                    produced,
                    drainCount / produced);
            if (!paced) {
                return new Result(name, duplicates, recordsPerSecond, -1, -1);
            }
            long pacedDistinct = produce(
                    broker,
                    drainTopic,
                    pacedTotal,
                    duplicates,
                    pacedRate,
                    ShareRecorder.PACED_KEY_PREFIX + group + "-");
            awaitCount(ShareRecorder::paced, sumi ? pacedDistinct : pacedTotal, Duration.ofMinutes(5), name + " paced");
            Result result = new Result(
                    name,
                    duplicates,
                    recordsPerSecond,
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

    /** The group as its coordinator describes it; {@code null} until its first member joins. */
    private static @Nullable ShareGroupDescription describe(Admin admin, String group) throws Exception {
        try {
            return admin.describeShareGroups(List.of(group))
                    .all()
                    .get(30, TimeUnit.SECONDS)
                    .get(group);
        } catch (ExecutionException ex) {
            if (ex.getCause() instanceof GroupIdNotFoundException) {
                return null;
            }
            throw ex;
        }
    }

    /**
     * Waits until the group coordinator describes {@code group} with all its members at the
     * group's target assignment and every partition of {@code topic} assigned: the drain then
     * starts on a group that is no longer joining.
     */
    private static Duration awaitMembers(KafkaBrokerProcess broker, String group, String topic) throws Exception {
        long started = System.nanoTime();
        long deadline = started + Duration.ofMinutes(2).toNanos();
        try (Admin admin = broker.admin()) {
            while (true) {
                ShareGroupDescription description = describe(admin, group);
                Set<Integer> assigned = new HashSet<>();
                boolean settled = description != null && description.members().size() == CONSUMERS;
                if (description != null) {
                    for (ShareMemberDescription member : description.members()) {
                        settled &= member.memberEpoch() == description.targetAssignmentEpoch();
                        for (TopicPartition partition : member.assignment().topicPartitions()) {
                            if (partition.topic().equals(topic)) {
                                assigned.add(partition.partition());
                            }
                        }
                    }
                }
                if (settled && assigned.size() == PARTITIONS) {
                    return Duration.ofNanos(System.nanoTime() - started);
                }
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException(
                            "share group " + group + " not assigned after 2 minutes: " + description);
                }
                Thread.sleep(50);
            }
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
                        + " %d rounds; run %s, %d s%n%n",
                records,
                PARTITIONS,
                CONSUMERS,
                pacedRate,
                pacedSeconds,
                rounds,
                started,
                Duration.between(started, Instant.now()).toSeconds());
        System.out.println("| case | duplicates | records/s (median) | lowest–highest | × bare | p50 ms | p99 ms |");
        System.out.println("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
        Map<String, List<Result>> byCase = new LinkedHashMap<>();
        for (Result result : results) {
            byCase.computeIfAbsent(result.duplicates() + "/" + result.name(), unused -> new ArrayList<>())
                    .add(result);
        }
        for (List<Result> runs : byCase.values()) {
            Result first = runs.get(0);
            double median = median(runs, Result::recordsPerSecond);
            List<Result> bare = byCase.get(first.duplicates() + "/bare");
            String ratio = bare == null
                    ? ""
                    : String.format(Locale.ROOT, "%.2f", median / median(bare, Result::recordsPerSecond));
            System.out.printf(
                    Locale.ROOT,
                    "| %s | %d %% | %,.0f | %,.0f–%,.0f | %s | %.0f | %.0f |%n",
                    first.name(),
                    first.duplicates(),
                    median,
                    runs.stream().mapToDouble(Result::recordsPerSecond).min().orElse(0),
                    runs.stream().mapToDouble(Result::recordsPerSecond).max().orElse(0),
                    ratio,
                    median(runs, result -> result.p50()),
                    median(runs, result -> result.p99()));
        }
    }

    /** The median of {@code value} over {@code runs} (the mean of the middle two for an even count). */
    private static double median(List<Result> runs, ToDoubleFunction<Result> value) {
        double[] sorted = runs.stream().mapToDouble(value).sorted().toArray();
        int middle = sorted.length / 2;
        return sorted.length % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
    }
}
