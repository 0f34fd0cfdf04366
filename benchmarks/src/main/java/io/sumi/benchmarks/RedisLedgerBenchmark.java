package io.sumi.benchmarks;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.sumi.store.ClaimOutcome;
import io.sumi.store.ClaimRequest;
import io.sumi.store.ClaimResult;
import io.sumi.store.ProcessedMessageStore;
import io.sumi.store.jdbc.JdbcProcessedMessageStore;
import io.sumi.store.redis.RedisProcessedMessageStore;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jspecify.annotations.Nullable;
import org.springframework.data.redis.connection.RedisClusterConfiguration;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * Claims per second of the ledger on Redis standalone, on Redis Clusters of 1, 2 and 3 masters
 * (each master with a replica) and on PostgreSQL, for
 * single-id claims (claim one, complete it: two round trips) and batch claims (claim 50 in one
 * call, complete them in one), from 1 and from 8 client threads. Each cell runs for a fixed time
 * after a warm-up; every claim is of a new id and must be {@code CLAIMED}.
 *
 * <pre>
 * java -cp benchmarks/target/sumi-benchmarks.jar -Dloader.main=io.sumi.benchmarks.RedisLedgerBenchmark \
 *   org.springframework.boot.loader.launch.PropertiesLauncher [--seconds=5] \
 *   [--targets=redis,cluster-1,cluster-2,cluster-3,postgres] [--redis=127.0.0.1:6379] \
 *   [--cluster-1=127.0.0.1:7410] [--cluster-2=127.0.0.1:7420] [--cluster-3=127.0.0.1:7400] \
 *   [--url=jdbc:postgresql://127.0.0.1:5432/sumi_bench] [--user=postgres]
 * </pre>
 *
 * {@code benchmarks/redis-cluster.sh start} starts the three clusters on the ports above (a
 * {@code --cluster-N} option is a seed node, comma-separated if more), {@code stop} stops them.
 */
public final class RedisLedgerBenchmark {

    private static final int BATCH = 50;
    private static final Duration LEASE = Duration.ofMinutes(5);

    private RedisLedgerBenchmark() {}

    public static void main(String[] args) throws Exception {
        int seconds = 5;
        List<String> targets = List.of("redis", "cluster-1", "cluster-2", "cluster-3", "postgres");
        String redis = "127.0.0.1:6379";
        Map<String, String> clusters = new HashMap<>(
                Map.of("cluster-1", "127.0.0.1:7410", "cluster-2", "127.0.0.1:7420", "cluster-3", "127.0.0.1:7400"));
        String url = System.getenv().getOrDefault("SUMI_BENCH_URL", "jdbc:postgresql://127.0.0.1:5432/sumi_bench");
        String user = "postgres";
        for (String arg : args) {
            String[] kv = arg.replaceFirst("^--", "").split("=", 2);
            String value = kv.length > 1 ? kv[1] : "";
            switch (kv[0]) {
                case "seconds" -> seconds = Integer.parseInt(value);
                case "targets" -> targets = Arrays.asList(value.split(",", -1));
                case "redis" -> redis = value;
                case "cluster-1", "cluster-2", "cluster-3" -> clusters.put(kv[0], value);
                case "url" -> url = value;
                case "user" -> user = value;
                default -> throw new IllegalArgumentException("Unknown option " + arg);
            }
        }
        System.out.printf(Locale.ROOT, "%-10s %-7s %7s %12s%n", "target", "claim", "threads", "claims/s");
        // target -> "single-1", "single-8", "batch-1", "batch-8" -> claims/s
        Map<String, Map<String, Double>> rates = new LinkedHashMap<>();
        for (String target : targets) {
            try (Target t = open(target, redis, clusters, url, user)) {
                for (boolean batch : new boolean[] {false, true}) {
                    for (int threads : new int[] {1, 8}) {
                        run(t.store, batch, threads, 1); // warm-up
                        double rate = run(t.store, batch, threads, seconds);
                        String claim = batch ? "batch" : "single";
                        rates.computeIfAbsent(target, k -> new LinkedHashMap<>())
                                .put(claim + "-" + threads, rate);
                        System.out.printf(Locale.ROOT, "%-10s %-7s %7d %12.0f%n", target, claim, threads, rate);
                    }
                }
            }
        }
        print(rates, seconds);
    }

    /** The run as a table, each cell also as a ratio to PostgreSQL's and to the 1-master cluster's. */
    private static void print(Map<String, Map<String, Double>> rates, int seconds) {
        System.out.printf(Locale.ROOT, "%n%d s per cell after a 1 s warm-up%n%n", seconds);
        System.out.println(
                "| target | claim | 1 thread | 8 threads | 8 threads × PostgreSQL | 8 threads × cluster-1 |");
        System.out.println("| --- | --- | ---: | ---: | ---: | ---: |");
        for (Map.Entry<String, Map<String, Double>> target : rates.entrySet()) {
            for (String claim : List.of("single", "batch")) {
                double eight = Objects.requireNonNull(target.getValue().get(claim + "-8"));
                System.out.printf(
                        Locale.ROOT,
                        "| %s | %s | %,.0f | %,.0f | %s | %s |%n",
                        target.getKey(),
                        claim.equals("batch") ? "batch of " + BATCH : claim,
                        Objects.requireNonNull(target.getValue().get(claim + "-1")),
                        eight,
                        ratio(eight, rates.get("postgres"), claim),
                        target.getKey().startsWith("cluster-") ? ratio(eight, rates.get("cluster-1"), claim) : "");
            }
        }
    }

    private static String ratio(double rate, @Nullable Map<String, Double> baseline, String claim) {
        return baseline == null
                ? ""
                : String.format(Locale.ROOT, "%.2f", rate / Objects.requireNonNull(baseline.get(claim + "-8")));
    }

    /** Ids claimed (and completed) per second, over {@code seconds}. */
    private static double run(ProcessedMessageStore store, boolean batch, int threads, int seconds) throws Exception {
        AtomicBoolean stop = new AtomicBoolean();
        CountDownLatch start = new CountDownLatch(1);
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        List<Future<Long>> counts = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            // One consumer per thread: on a cluster the threads' consumers spread over the masters.
            String consumer = "bench-" + UUID.randomUUID();
            counts.add(pool.submit(() -> {
                start.await();
                long claimed = 0;
                for (long n = 0; !stop.get(); n++) {
                    if (batch) {
                        List<ClaimRequest> requests = new ArrayList<>(BATCH);
                        List<String> ids = new ArrayList<>(BATCH);
                        for (int i = 0; i < BATCH; i++) {
                            String id = n + "-" + i;
                            ids.add(id);
                            requests.add(new ClaimRequest(id, null));
                        }
                        List<ClaimResult> results = store.claimAll(consumer, requests, LEASE);
                        store.completeAll(consumer, results.get(0).message().claimToken(), ids);
                        claimed += BATCH;
                    } else {
                        ClaimResult result = store.claim(consumer, new ClaimRequest(Long.toString(n), null), LEASE);
                        if (result.outcome() != ClaimOutcome.CLAIMED) {
                            throw new IllegalStateException("not claimed: " + result);
                        }
                        store.complete(result.message());
                        claimed++;
                    }
                }
                return claimed;
            }));
        }
        long began = System.nanoTime();
        start.countDown();
        TimeUnit.SECONDS.sleep(seconds); // the measured interval itself, not a wait for a condition
        stop.set(true);
        long total = 0;
        for (Future<Long> count : counts) {
            total += count.get(1, TimeUnit.MINUTES);
        }
        double elapsed = (System.nanoTime() - began) / 1e9;
        pool.shutdown();
        return total / elapsed;
    }

    private record Target(ProcessedMessageStore store, Runnable resource) implements AutoCloseable {
        @Override
        public void close() {
            resource.run();
        }
    }

    private static Target open(String target, String redis, Map<String, String> clusters, String url, String user)
            throws Exception {
        switch (target) {
            case "redis" -> {
                String[] hostPort = redis.split(":", 2);
                LettuceConnectionFactory factory = new LettuceConnectionFactory(
                        new RedisStandaloneConfiguration(hostPort[0], Integer.parseInt(hostPort[1])));
                factory.afterPropertiesSet();
                factory.start();
                return new Target(redisStore(factory), factory::destroy);
            }
            case "cluster-1", "cluster-2", "cluster-3" -> {
                LettuceConnectionFactory factory = new LettuceConnectionFactory(new RedisClusterConfiguration(
                        Arrays.asList(clusters.get(target).split(",", -1))));
                factory.afterPropertiesSet();
                factory.start();
                return new Target(redisStore(factory), factory::destroy);
            }
            case "postgres" -> {
                new BenchDatabase(url, user, "").ensureDatabase();
                HikariConfig config = new HikariConfig();
                config.setJdbcUrl(url);
                config.setUsername(user);
                config.setMaximumPoolSize(9);
                config.setConnectionInitSql("SET search_path TO redis_bench");
                try (Connection c = java.sql.DriverManager.getConnection(url, user, "");
                        Statement s = c.createStatement()) {
                    s.execute("DROP SCHEMA IF EXISTS redis_bench CASCADE");
                    s.execute("CREATE SCHEMA redis_bench");
                    s.execute("SET search_path TO redis_bench");
                    s.execute(BenchDatabase.ledgerMigration());
                }
                HikariDataSource dataSource = new HikariDataSource(config);
                return new Target(JdbcProcessedMessageStore.builder(dataSource).build(), dataSource::close);
            }
            default -> throw new IllegalArgumentException("Unknown target " + target);
        }
    }

    /** A short retention: the run's rows expire soon after it. */
    private static ProcessedMessageStore redisStore(LettuceConnectionFactory factory) {
        return RedisProcessedMessageStore.builder(factory)
                .prefix("sumi-bench:ledger")
                .retention(Duration.ofMinutes(10))
                .build();
    }
}
