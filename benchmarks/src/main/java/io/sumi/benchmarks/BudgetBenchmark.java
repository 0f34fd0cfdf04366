package io.sumi.benchmarks;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.sumi.budget.Budget;
import io.sumi.budget.BudgetConfig;
import io.sumi.budget.BudgetPermit;
import io.sumi.budget.BudgetRegistry;
import io.sumi.budget.BudgetScope;
import io.sumi.budget.jdbc.JdbcSpendStore;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.locks.LockSupport;

/**
 * The per-call overhead of a fleet budget (spend reserved in chunks in PostgreSQL) next to an
 * instance budget (this JVM's sliding window) and no budget at all, around a call of 1 ms and
 * around an empty call (the overhead alone, without the sleep's jitter). The cases run
 * round-robin in one JVM; the median of the rounds is printed, with the ratios.
 *
 * <pre>
 * java -jar benchmarks/target/sumi-benchmarks.jar budgets [--rounds=N] [--calls=N] [--url=...]
 * </pre>
 */
public final class BudgetBenchmark {

    private BudgetBenchmark() {}

    public static void main(String[] args) throws Exception {
        Map<String, String> options = BenchOptions.parse("BudgetBenchmark", args);
        int rounds = Integer.parseInt(options.getOrDefault("rounds", "3"));
        int calls = Integer.parseInt(options.getOrDefault("calls", "500"));
        int smallChunk = Integer.parseInt(options.getOrDefault("small-chunk", "0"));
        int emptyCalls = Integer.parseInt(options.getOrDefault("empty-calls", "20000"));
        String url =
                options.getOrDefault("url", envOr("SUMI_BENCH_URL", "jdbc:postgresql://127.0.0.1:5432/sumi_bench"));
        String user = options.getOrDefault("user", envOr("SUMI_BENCH_USER", "postgres"));
        String password = options.getOrDefault("password", envOr("SUMI_BENCH_PASSWORD", ""));
        new BenchDatabase(url, user, password).ensureDatabase();

        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(url);
        config.setUsername(user);
        config.setPassword(password);
        config.setMaximumPoolSize(4);
        config.setPoolName("bench-budgets");
        try (HikariDataSource dataSource = new HikariDataSource(config)) {
            migrate(dataSource);
            String run = UUID.randomUUID().toString().substring(0, 8);
            double limit = 1e12; // never reached: the overhead of permitting, not of refusing
            // A short window, alike per round: the instance budget's window holds every call of the last second
            // (its running sum costs the same whatever their number; evicting them is part of the overhead).
            Duration window = Duration.ofSeconds(1);
            BudgetRegistry.Builder builder = BudgetRegistry.builder().spendStore(JdbcSpendStore.of(dataSource));
            if (smallChunk > 0) {
                // A chunk this small pays a round trip every few calls: what the chunk saves.
                builder.budget(
                        "fleet-small-" + run,
                        BudgetConfig.custom()
                                .limit(limit)
                                .window(window)
                                .scope(BudgetScope.FLEET)
                                .chunkSize(smallChunk)
                                .build());
            }
            BudgetRegistry registry = builder.budget(
                            "instance-" + run,
                            BudgetConfig.custom()
                                    .limit(limit)
                                    .window(window)
                                    .scope(BudgetScope.INSTANCE)
                                    .build())
                    .budget(
                            "fleet-" + run,
                            BudgetConfig.custom()
                                    .limit(limit)
                                    .window(window)
                                    .scope(BudgetScope.FLEET)
                                    .chunkSize(1_000)
                                    .build())
                    .build();
            Map<String, Budget> cases = new LinkedHashMap<>();
            cases.put("none", null);
            cases.put("instance", registry.budget("instance-" + run));
            cases.put("fleet (chunk 1000)", registry.budget("fleet-" + run));
            if (smallChunk > 0) {
                cases.put("fleet (chunk " + smallChunk + ")", registry.budget("fleet-small-" + run));
            }

            System.out.printf(
                    "Budget overhead: %d rounds; per round %d calls of 1 ms and %d empty calls per case, one thread%n",
                    rounds, calls, emptyCalls);
            Map<String, List<Double>> slow = new LinkedHashMap<>();
            Map<String, List<Double>> empty = new LinkedHashMap<>();
            // Warm-up: every path compiled, every fleet budget holding a chunk.
            for (Map.Entry<String, Budget> c : cases.entrySet()) {
                measure(c.getValue(), 200, 1_000_000);
                measure(c.getValue(), emptyCalls, 0);
            }
            for (int round = 0; round < rounds; round++) {
                System.out.printf("round %d of %d%n", round + 1, rounds);
                for (Map.Entry<String, Budget> c : cases.entrySet()) {
                    slow.computeIfAbsent(c.getKey(), k -> new ArrayList<>())
                            .add(measure(c.getValue(), calls, 1_000_000));
                    empty.computeIfAbsent(c.getKey(), k -> new ArrayList<>()).add(measure(c.getValue(), emptyCalls, 0));
                }
            }
            registry.close();
            double slowNone = median(slow.get("none"));
            double emptyNone = median(empty.get("none"));
            double emptyInstance = median(empty.get("instance"));
            System.out.printf(
                    "%-20s %16s %12s %18s %14s%n",
                    "case", "1 ms call (us)", "vs none", "overhead alone (us)", "% of 1 ms");
            for (String name : cases.keySet()) {
                double s = median(slow.get(name));
                double e = median(empty.get(name)) - emptyNone;
                System.out.printf(
                        "%-20s %16.1f %11.3fx %18.3f %13.3f%%%n",
                        name, s / 1_000, s / slowNone, e / 1_000, e / 1_000_000 * 100);
            }
            double fleet = median(empty.get("fleet (chunk 1000)"));
            System.out.printf(
                    "fleet (chunk 1000) vs instance: %.3fx the overhead; the difference is %.3f%% of a 1 ms call"
                            + " (target <= 5 %%)%n",
                    (fleet - emptyNone) / (emptyInstance - emptyNone), (fleet - emptyInstance) / 1_000_000 * 100);
            System.out.printf(
                    "fleet vs instance around the 1 ms call: %.4fx%n",
                    median(slow.get("fleet (chunk 1000)")) / median(slow.get("instance")));
        }
    }

    /** Mean nanoseconds per call of {@code n} calls that each park {@code callNanos} under {@code budget}. */
    private static double measure(Budget budget, int n, long callNanos) {
        long start = System.nanoTime();
        for (int i = 0; i < n; i++) {
            BudgetPermit permit = budget == null ? null : budget.acquire();
            if (callNanos > 0) {
                long until = System.nanoTime() + callNanos;
                while (System.nanoTime() < until) {
                    LockSupport.parkNanos(Math.max(1, until - System.nanoTime() - 50_000));
                    if (until - System.nanoTime() < 60_000) {
                        while (System.nanoTime() < until) {
                            Thread.onSpinWait();
                        }
                    }
                }
            }
            if (permit != null) {
                permit.onSuccess();
            }
        }
        return (System.nanoTime() - start) / (double) n;
    }

    private static double median(List<Double> values) {
        double[] sorted = values.stream().mapToDouble(Double::doubleValue).toArray();
        Arrays.sort(sorted);
        return sorted[sorted.length / 2];
    }

    private static void migrate(HikariDataSource dataSource) throws Exception {
        try (Connection connection = dataSource.getConnection();
                Statement statement = connection.createStatement()) {
            for (String sql : BenchSql.statements(BenchSql.migration("db/sumi/postgresql/R__sumi_budgets.sql"))) {
                statement.execute(sql);
            }
        }
    }

    private static String envOr(String name, String fallback) {
        String value = System.getenv(name);
        return value == null || value.isBlank() ? fallback : value;
    }
}
