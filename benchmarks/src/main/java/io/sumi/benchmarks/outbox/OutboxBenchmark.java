package io.sumi.benchmarks.outbox;

import io.sumi.benchmarks.BenchOptions;
import io.sumi.benchmarks.BenchSql;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.springframework.kafka.test.EmbeddedKafkaKraftBroker;

/**
 * Outbox dispatch benchmark (issue 3, "Performance"): Sumi's transactional outbox against Spring
 * Modulith's JDBC event publication registry + Kafka externalization, side by side in one run,
 * same JVM, same PostgreSQL, same in-process Kafka broker (spring-kafka-test's
 * {@link EmbeddedKafkaKraftBroker}, one topic of 4 partitions per system).
 *
 * <ol>
 *   <li><b>Backlog drain</b>: 100,000 committed, undispatched messages; then dispatching starts and
 *   the clock runs until the last one is recorded as dispatched in the database (rows/s).</li>
 *   <li><b>Steady lag</b>: one message per business transaction at a fixed open-loop rate (1,000
 *   and 5,000 rows/s by default, 4 writer threads), created → acked by the broker (p50/p95/p99/max),
 *   measured in the producer's acknowledgement callback of each system by the same code.</li>
 * </ol>
 *
 * <p>A main class, never a test: {@code mvn verify} does not run it. Run (see
 * docs/benchmarks-outbox.md):
 * <pre>
 * ./mvnw -q -pl benchmarks -am -DskipTests package   # or compile; then
 * java -cp "benchmarks/target/classes:$(cat /tmp/outbox-bench.cp)" io.sumi.benchmarks.outbox.OutboxBenchmark
 * </pre>
 * Options ({@code --name=value}): {@code jdbc-url} (jdbc:postgresql://127.0.0.1:5432/sumi_outbox_bench,
 * created if missing), {@code user} (postgres), {@code backlog} (100000), {@code rates} (1000,5000),
 * {@code seconds} (20 per steady phase), {@code warmup-seconds} (5), {@code writers} (4),
 * {@code aggregates} (1000), {@code sumi-batch} (500), {@code sumi-ordered} (true),
 * {@code modulith-threads} (8), {@code pool} (10), {@code sumi-linger} / {@code modulith-linger} (producer linger.ms, 5),
 * {@code modulith-producer-per-thread} (false), {@code drain-timeout} (150 s), {@code modulith-backlog} (= backlog),
 * {@code only} (sumi|modulith; both by default; a {@code jdbc:mariadb:} URL runs Sumi's outbox on
 * MariaDB, with {@code --only=sumi}), {@code sumi-depths} (1,2: one Sumi system per
 * dispatcher pipeline depth, each measured in every phase, ratios to depth 1 printed; issue 12).
 */
public final class OutboxBenchmark {

    private OutboxBenchmark() {}

    public static void main(String[] args) throws Exception {
        Map<String, String> options = BenchOptions.parse("OutboxBenchmark", args);
        String jdbcUrl = options.getOrDefault("jdbc-url", "jdbc:postgresql://127.0.0.1:5432/sumi_outbox_bench");
        String user = options.getOrDefault("user", "postgres");
        int backlog = Integer.parseInt(options.getOrDefault("backlog", "100000"));
        List<Integer> rates = new ArrayList<>();
        for (String rate : options.getOrDefault("rates", "1000,5000").split(",", -1)) {
            rates.add(Integer.parseInt(rate.trim()));
        }
        int seconds = Integer.parseInt(options.getOrDefault("seconds", "20"));
        int warmupSeconds = Integer.parseInt(options.getOrDefault("warmup-seconds", "5"));
        int writers = Integer.parseInt(options.getOrDefault("writers", "4"));
        int aggregates = Integer.parseInt(options.getOrDefault("aggregates", "1000"));
        int sumiBatch = Integer.parseInt(options.getOrDefault("sumi-batch", "500"));
        boolean sumiOrdered = Boolean.parseBoolean(options.getOrDefault("sumi-ordered", "true"));
        int modulithThreads = Integer.parseInt(options.getOrDefault("modulith-threads", "8"));
        int pool = Integer.parseInt(options.getOrDefault("pool", "10"));
        int drainTimeout = Integer.parseInt(options.getOrDefault("drain-timeout", "150"));
        int sumiLinger = Integer.parseInt(options.getOrDefault("sumi-linger", "5"));
        int modulithLinger = Integer.parseInt(options.getOrDefault("modulith-linger", "5"));
        boolean producerPerThread = Boolean.parseBoolean(options.getOrDefault("modulith-producer-per-thread", "false"));
        int modulithBacklog = Integer.parseInt(options.getOrDefault("modulith-backlog", String.valueOf(backlog)));
        String only = options.getOrDefault("only", "both");
        List<Integer> sumiDepths = new ArrayList<>();
        for (String depth : options.getOrDefault("sumi-depths", "1,2").split(",", -1)) {
            sumiDepths.add(Integer.parseInt(depth.trim()));
        }

        if (BenchSql.isMariaDb(jdbcUrl) && !only.equals("sumi")) {
            // The Modulith side (its registry's schema, the filler and count SQL) was written and
            // checked on PostgreSQL only.
            throw new IllegalArgumentException(
                    "On MariaDB the benchmark runs Sumi alone (its Modulith side is PostgreSQL's): add --only=sumi");
        }
        createDatabaseIfMissing(jdbcUrl, user);
        EmbeddedKafkaKraftBroker broker = new EmbeddedKafkaKraftBroker(1, 4, SumiSystem.TOPIC, ModulithSystem.TOPIC);
        broker.afterPropertiesSet();
        LagRecorder recorder = new LagRecorder();
        List<OutboxSystem> systems = new ArrayList<>();
        try {
            if (!only.equals("modulith")) {
                for (int depth : sumiDepths) {
                    systems.add(new SumiSystem(
                            jdbcUrl,
                            user,
                            broker.getBrokersAsString(),
                            recorder,
                            sumiBatch,
                            sumiOrdered,
                            pool,
                            sumiLinger,
                            depth));
                }
            }
            if (!only.equals("sumi")) {
                systems.add(new ModulithSystem(
                        jdbcUrl,
                        user,
                        broker.getBrokersAsString(),
                        recorder,
                        modulithThreads,
                        pool,
                        modulithLinger,
                        producerPerThread));
            }
            System.out.printf(
                    Locale.ROOT,
                    "Outbox benchmark: Java %s, %d cores, load average %.2f, %s; backlog %,d; rates %s rows/s for %d s"
                            + " (+%d s warm-up), %d writer threads, %d aggregates%n",
                    System.getProperty("java.version"),
                    Runtime.getRuntime().availableProcessors(),
                    loadAverage(),
                    jdbcUrl,
                    backlog,
                    rates,
                    seconds,
                    warmupSeconds,
                    writers,
                    aggregates);
            for (OutboxSystem system : systems) {
                System.out.println("  " + system.name() + ": " + system.settings());
            }

            // JIT warm-up of both paths, unmeasured.
            for (OutboxSystem system : systems) {
                system.truncate();
                system.startLive();
                paced(
                        system,
                        "jit-" + system.name(),
                        rates.get(0),
                        (long) rates.get(0) * warmupSeconds,
                        writers,
                        aggregates);
                awaitDrained(system, 30);
                system.pause();
            }

            Map<String, double[]> drain = new LinkedHashMap<>();
            for (OutboxSystem system : systems) {
                system.truncate();
                int rows = system instanceof ModulithSystem ? modulithBacklog : backlog;
                long loadStart = System.nanoTime();
                system.loadBacklog("backlog", rows, aggregates);
                double loadSeconds = (System.nanoTime() - loadStart) / 1e9;
                recorder.reset("backlog");
                long start = System.nanoTime();
                system.startDrain();
                long left = awaitDrained(system, drainTimeout);
                double elapsed = (System.nanoTime() - start) / 1e9;
                double rowsPerSecond = (rows - left) / elapsed;
                drain.put(system.name(), new double[] {rowsPerSecond, left, elapsed, recorder.ackedInPhase()});
                System.out.printf(
                        Locale.ROOT,
                        "backlog %-16s %,9.0f rows/s  (%,d rows in %.2f s%s; load took %.1f s, acked %,d)%n",
                        system.name(),
                        rowsPerSecond,
                        rows - left,
                        elapsed,
                        left > 0 ? ", TIMED OUT with " + left + " left" : "",
                        loadSeconds,
                        recorder.ackedInPhase());
                system.pause();
            }

            Map<String, double[]> lags = new LinkedHashMap<>();
            for (int rate : rates) {
                for (OutboxSystem system : systems) {
                    system.truncate();
                    system.startLive();
                    String phase = "steady-" + rate;
                    paced(system, "warm-" + rate, rate, (long) rate * warmupSeconds, writers, aggregates);
                    recorder.reset(phase);
                    long total = (long) rate * seconds;
                    double achieved = paced(system, phase, rate, total, writers, aggregates);
                    long deadline = System.nanoTime() + 30_000_000_000L;
                    while (recorder.ackedInPhase() < total && System.nanoTime() < deadline) {
                        Thread.sleep(20);
                    }
                    double[] p = recorder.percentilesMillis();
                    long acked = recorder.ackedInPhase();
                    lags.put(system.name() + "@" + rate, new double[] {p[0], p[1], p[2], p[3], achieved, acked, total});
                    System.out.printf(
                            Locale.ROOT,
                            "steady %5d/s %-16s p50 %8.1f ms  p95 %8.1f ms  p99 %8.1f ms  max %8.1f ms"
                                    + "  (offered %.0f rows/s, acked %,d of %,d)%n",
                            rate,
                            system.name(),
                            p[0],
                            p[1],
                            p[2],
                            p[3],
                            achieved,
                            acked,
                            total);
                    awaitDrained(system, 30);
                    system.pause();
                }
            }

            report(systems, drain, lags, rates);
            System.out.printf(Locale.ROOT, "%nLoad average (1 min) at the end: %.2f%n", loadAverage());
        } finally {
            for (OutboxSystem system : systems) {
                try {
                    system.close();
                } catch (Exception ex) {
                    System.err.println("Closing " + system.name() + ": " + ex);
                }
            }
            broker.destroy();
        }
        System.exit(0);
    }

    /**
     * The table: one column per system, then the ratios: each pipelined Sumi against Sumi at depth
     * 1 (issue 12), and the last Sumi against Spring Modulith when both ran (issue 3).
     */
    private static void report(
            List<OutboxSystem> systems, Map<String, double[]> drain, Map<String, double[]> lags, List<Integer> rates) {
        List<SumiSystem> sumis = systems.stream()
                .filter(SumiSystem.class::isInstance)
                .map(SumiSystem.class::cast)
                .toList();
        SumiSystem depthOne = sumis.stream()
                .filter(sumi -> sumi.pipelineDepth() == 1)
                .findFirst()
                .orElse(null);
        List<String[]> ratios = new ArrayList<>(); // {label, numerator system, denominator system}
        if (depthOne != null) {
            for (SumiSystem sumi : sumis) {
                if (sumi != depthOne) {
                    ratios.add(new String[] {sumi.name() + " vs " + depthOne.name(), sumi.name(), depthOne.name()});
                }
            }
        }
        OutboxSystem peer = systems.stream()
                .filter(ModulithSystem.class::isInstance)
                .findFirst()
                .orElse(null);
        if (peer != null && !sumis.isEmpty()) {
            SumiSystem last = sumis.get(sumis.size() - 1);
            ratios.add(new String[] {last.name() + " vs Modulith", last.name(), peer.name()});
        }
        System.out.println();
        StringBuilder header = new StringBuilder("| measurement |");
        StringBuilder rule = new StringBuilder("| --- |");
        for (OutboxSystem system : systems) {
            header.append(' ').append(system.name()).append(" |");
            rule.append(" --- |");
        }
        for (String[] ratio : ratios) {
            header.append(' ').append(ratio[0]).append(" |");
            rule.append(" --- |");
        }
        System.out.println(header);
        System.out.println(rule);
        StringBuilder row = new StringBuilder("| backlog drain, rows/s |");
        for (OutboxSystem system : systems) {
            double[] d = drain.get(system.name());
            row.append(String.format(Locale.ROOT, " %,.0f%s |", d[0], d[1] > 0 ? " (timed out)" : ""));
        }
        for (String[] ratio : ratios) {
            row.append(String.format(
                    Locale.ROOT, " %.2f× the throughput |", drain.get(ratio[1])[0] / drain.get(ratio[2])[0]));
        }
        System.out.println(row);
        String[] labels = {"p50", "p95", "p99", "max"};
        for (int rate : rates) {
            for (int i = 0; i < labels.length; i++) {
                row = new StringBuilder(String.format(Locale.ROOT, "| lag %s at %,d rows/s, ms |", labels[i], rate));
                for (OutboxSystem system : systems) {
                    double[] l = lags.get(system.name() + "@" + rate);
                    row.append(String.format(
                            Locale.ROOT,
                            " %.1f%s |",
                            l[i],
                            l[5] < l[6] ? " (" + (long) l[5] + "/" + (long) l[6] + " acked)" : ""));
                }
                for (String[] ratio : ratios) {
                    double mine = lags.get(ratio[1] + "@" + rate)[i];
                    double other = lags.get(ratio[2] + "@" + rate)[i];
                    row.append(String.format(
                            Locale.ROOT,
                            " %.2f× %s |",
                            mine <= other ? other / mine : mine / other,
                            mine <= other ? "lower" : "HIGHER"));
                }
                System.out.println(row);
            }
        }
        System.out.println();
        for (SumiSystem sumi : sumis) {
            double[] sumiDrain = drain.get(sumi.name());
            System.out.println(verdict(
                    sumi.name() + ": backlog drain >= 30,000 rows/s (issue 12)",
                    sumiDrain[0] >= 30_000 && sumiDrain[1] == 0,
                    String.format(Locale.ROOT, "%,.0f rows/s", sumiDrain[0])));
            double[] l1000 = lags.get(sumi.name() + "@1000");
            if (l1000 != null) {
                System.out.println(verdict(
                        sumi.name() + ": p95 lag <= 20 ms at 1,000 rows/s (issue 12)",
                        l1000[1] <= 20 && l1000[5] == l1000[6],
                        String.format(Locale.ROOT, "%.1f ms", l1000[1])));
            }
            if (peer != null) {
                double[] peerDrain = drain.get(peer.name());
                System.out.println(verdict(
                        sumi.name() + ": drain ahead of the peer",
                        sumiDrain[0] > peerDrain[0],
                        String.format(Locale.ROOT, "%,.0f vs %,.0f rows/s", sumiDrain[0], peerDrain[0])));
                double[] peer1000 = lags.get(peer.name() + "@1000");
                if (l1000 != null && peer1000 != null) {
                    System.out.println(verdict(
                            sumi.name() + ": p95 lag at 1,000 rows/s ahead of the peer",
                            l1000[1] < peer1000[1],
                            String.format(Locale.ROOT, "%.1f vs %.1f ms", l1000[1], peer1000[1])));
                }
            }
        }
    }

    static double loadAverage() {
        return java.lang.management.ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage();
    }

    static String verdict(String target, boolean pass, String figure) {
        return (pass ? "PASS " : "MISS ") + target + ": " + figure;
    }

    /**
     * Appends {@code total} messages, one per transaction, on an open-loop schedule of {@code rate}
     * per second spread over {@code writers} threads (a late writer catches up, it never skips).
     *
     * @return the achieved rate
     */
    static double paced(OutboxSystem system, String phase, int rate, long total, int writers, int aggregates)
            throws Exception {
        AtomicLong next = new AtomicLong();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        long start = System.nanoTime() + 10_000_000L;
        double interval = 1e9 / rate;
        List<Thread> threads = new ArrayList<>();
        for (int w = 0; w < writers; w++) {
            Thread thread = new Thread(
                    () -> {
                        long seq;
                        while ((seq = next.getAndIncrement()) < total && failure.get() == null) {
                            long wait = start + (long) (seq * interval) - System.nanoTime();
                            if (wait > 0) {
                                LockSupport.parkNanos(wait);
                            }
                            try {
                                system.appendOne(phase, seq, Payloads.aggregate(seq, aggregates));
                            } catch (Throwable ex) {
                                failure.compareAndSet(null, ex);
                            }
                        }
                    },
                    "writer-" + w);
            thread.start();
            threads.add(thread);
        }
        for (Thread thread : threads) {
            thread.join();
        }
        if (failure.get() != null) {
            throw new IllegalStateException("An append failed", failure.get());
        }
        return total / ((System.nanoTime() - start) / 1e9);
    }

    /** Waits until the system's table has no undispatched row, at most {@code timeoutSeconds}; returns what is left. */
    static long awaitDrained(OutboxSystem system, int timeoutSeconds) throws Exception {
        long deadline = System.nanoTime() + timeoutSeconds * 1_000_000_000L;
        long left;
        while ((left = system.undispatched()) > 0 && System.nanoTime() < deadline) {
            Thread.sleep(50);
        }
        return left;
    }

    static void createDatabaseIfMissing(String jdbcUrl, String user) throws Exception {
        if (BenchSql.isMariaDb(jdbcUrl)) {
            BenchSql.ensureMariaDbDatabase(jdbcUrl, user, null);
            return;
        }
        int slash = jdbcUrl.lastIndexOf('/');
        String database = jdbcUrl.substring(slash + 1).replaceAll("\\?.*", "");
        String admin = jdbcUrl.substring(0, slash + 1) + "postgres";
        try (Connection connection = DriverManager.getConnection(admin, user, null);
                Statement statement = connection.createStatement()) {
            try (ResultSet rs = statement.executeQuery(
                    "SELECT 1 FROM pg_database WHERE datname = '" + database.replace("'", "''") + "'")) {
                if (rs.next()) {
                    return;
                }
            }
            statement.execute("CREATE DATABASE \"" + database.replace("\"", "") + "\"");
        }
    }
}
