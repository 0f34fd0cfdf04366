package io.sumi.benchmarks.outbox;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.sumi.benchmarks.BenchOptions;
import io.sumi.benchmarks.CpuMonitor;
import io.sumi.outbox.Outbox;
import io.sumi.outbox.OutboxDispatcher;
import io.sumi.outbox.OutboxMessage;
import io.sumi.outbox.OutboxTable;
import io.sumi.outbox.cdc.OutboxCdc;
import io.sumi.outbox.kafka.KafkaOutboxPublisher;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.kafka.test.EmbeddedKafkaKraftBroker;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * CDC dispatch against polling (issue 21), in one run, on one PostgreSQL cluster with
 * {@code wal_level = logical} ({@code benchmarks/logical-postgres.sh start}: the machine's shared
 * server runs {@code replica}) and one in-process Kafka broker (spring-kafka-test's
 * {@link EmbeddedKafkaKraftBroker}, one topic of 4 partitions). See docs/benchmarks-outbox.md,
 * "CDC dispatch against polling (issue 21)".
 *
 * <ol>
 *   <li><b>Lag created → acked</b> (p50/p95/p99/max) at each rate (1,000 and 5,000 rows/s by
 *   default), one message per business transaction, open loop, for four cases:
 *   <ul>
 *     <li>{@code polling-own}: one instance writes and dispatches; its appends wake its dispatcher
 *     after each commit (the polling dispatcher's fast path);</li>
 *     <li>{@code polling-3}: three instances write (round robin), only the first runs a
 *     dispatcher (library defaults: 500 ms to 5 s poll interval); only the first's appends wake it,
 *     the other two's rows wait for its next wake-up or poll;</li>
 *     <li>{@code cdc-own} and {@code cdc-3}: the same writers; the first instance runs an
 *     {@link OutboxCdc} and its polling dispatcher as the starter sets it under CDC (poll interval
 *     {@code cdc-polling-interval}, 30 s; poll delay {@code cdc-polling-delay}, 10 s; no wake-up
 *     after commit on any instance).</li>
 *   </ul>
 *   An "instance" is a connection pool, an {@link OutboxTable} and an {@link Outbox} of its own in
 *   this JVM; nothing links one instance's commits to another's dispatcher, which is all that
 *   separates instances here (the wake-up after commit is a method call within one JVM).</li>
 *   <li><b>Backlog drain</b>: 100,000 committed rows, then dispatching starts; rows/s until none is
 *   undispatched. Polling: the dispatcher at its defaults. CDC: the slot is created (an engine
 *   started and stopped) before the backlog is written, so the log holds it; then a new
 *   {@link OutboxCdc} streams it, alone (the polling dispatcher is not started).</li>
 *   <li><b>Idle database load</b>: nothing written for {@code idle-seconds} after
 *   {@code idle-settle-seconds}; the cluster's CPU time (its postmaster and every child process,
 *   from /proc: {@link CpuMonitor#clusterCpuSeconds}), the statements executed in the benchmark's
 *   database ({@code pg_stat_statements}: the cluster preloads it) and its transactions
 *   ({@code pg_stat_database}: {@code xact_commit + xact_rollback}); for 1 and 3 instances, each
 *   running a dispatcher (polling at its defaults, or under CDC with an {@code OutboxCdc} each: one
 *   streams, the others wait to take over).</li>
 * </ol>
 *
 * <p>A main class, never a test. Run (docs/benchmarks-outbox.md):
 * <pre>
 * benchmarks/logical-postgres.sh start
 * java -cp benchmarks/target/sumi-benchmarks.jar -Dloader.main=io.sumi.benchmarks.outbox.CdcBenchmark \
 *   org.springframework.boot.loader.launch.PropertiesLauncher
 * benchmarks/logical-postgres.sh stop
 * </pre>
 * Options ({@code --name=value}): {@code jdbc-url} (jdbc:postgresql://127.0.0.1:5440/sumi_cdc_bench,
 * created if missing), {@code user} (postgres), {@code rates} (1000,5000), {@code seconds} (10 per
 * lag phase), {@code warmup-seconds} (3, at the rate, before each), {@code writers} (4 threads),
 * {@code aggregates} (1000), {@code instances} (3), {@code pool} (10 connections per instance),
 * {@code cases} (polling-own,cdc-own,polling-3,cdc-3), {@code backlog} (100000),
 * {@code drain-timeout} (120 s), {@code idle-seconds} (60), {@code idle-settle-seconds} (15: past the
 * dispatcher's ramp to its longest poll interval and the engine's first heartbeat),
 * {@code idle-instances} (1,3), {@code phases} (lag,drain,idle), {@code slot} (sumi_bench_cdc),
 * {@code cdc-polling-interval} (30 s), {@code cdc-polling-delay} (10 s), {@code heartbeat-seconds}
 * (60), {@code take-over-millis} (2000), {@code offset-flush-millis} (1000): the starter's defaults; {@code analyze-every} (0: seconds between two
 * {@code ANALYZE outbox} during each lag phase, an experiment on fresh statistics; off by default:
 * the table's statistics are those of the {@code ANALYZE} at the phase's start, when no row is
 * pending, as a healthy outbox's are), {@code trace} (false: true prints,
 * every second of each lag phase, the rows written, read and sent by the log, acknowledged, and
 * undispatched); {@code batch} (the dispatcher's batch size,
 * {@value OutboxDispatcher#DEFAULT_BATCH_SIZE} as by default, for both paths).
 */
public final class CdcBenchmark {

    static final String TOPIC = "bench.cdc";

    private CdcBenchmark() {}

    /** What every case shares: where the database is and the CDC settings. */
    record Settings(
            String jdbcUrl,
            String user,
            String slot,
            Duration cdcPollingInterval,
            Duration cdcPollingDelay,
            Duration heartbeat,
            Duration takeOver,
            Duration offsetFlush,
            int batchSize) {}

    public static void main(String[] args) throws Exception {
        Map<String, String> options = BenchOptions.parse("CdcBenchmark", args);
        String jdbcUrl = options.getOrDefault("jdbc-url", "jdbc:postgresql://127.0.0.1:5440/sumi_cdc_bench");
        String user = options.getOrDefault("user", "postgres");
        List<Integer> rates = ints(options.getOrDefault("rates", "1000,5000"));
        int seconds = Integer.parseInt(options.getOrDefault("seconds", "10"));
        int warmupSeconds = Integer.parseInt(options.getOrDefault("warmup-seconds", "3"));
        int writers = Integer.parseInt(options.getOrDefault("writers", "4"));
        int aggregates = Integer.parseInt(options.getOrDefault("aggregates", "1000"));
        int instanceCount = Integer.parseInt(options.getOrDefault("instances", "3"));
        int pool = Integer.parseInt(options.getOrDefault("pool", "10"));
        List<String> caseNames = words(options.getOrDefault("cases", "polling-own,cdc-own,polling-3,cdc-3"));
        int backlog = Integer.parseInt(options.getOrDefault("backlog", "100000"));
        int drainTimeout = Integer.parseInt(options.getOrDefault("drain-timeout", "120"));
        int idleSeconds = Integer.parseInt(options.getOrDefault("idle-seconds", "60"));
        int idleSettle = Integer.parseInt(options.getOrDefault("idle-settle-seconds", "15"));
        List<Integer> idleFleets = ints(options.getOrDefault("idle-instances", "1," + instanceCount));
        boolean trace = Boolean.parseBoolean(options.getOrDefault("trace", "false"));
        int analyzeEvery = Integer.parseInt(options.getOrDefault("analyze-every", "0"));
        Set<String> phases = new TreeSet<>(words(options.getOrDefault("phases", "lag,drain,idle")));
        Settings settings = new Settings(
                jdbcUrl,
                user,
                options.getOrDefault("slot", "sumi_bench_cdc"),
                Duration.ofSeconds(Long.parseLong(options.getOrDefault("cdc-polling-interval", "30"))),
                Duration.ofSeconds(Long.parseLong(options.getOrDefault("cdc-polling-delay", "10"))),
                Duration.ofSeconds(Long.parseLong(options.getOrDefault(
                        "heartbeat-seconds", String.valueOf(OutboxCdc.DEFAULT_HEARTBEAT_INTERVAL.toSeconds())))),
                Duration.ofMillis(Long.parseLong(options.getOrDefault(
                        "take-over-millis", String.valueOf(OutboxCdc.DEFAULT_TAKE_OVER_INTERVAL.toMillis())))),
                Duration.ofMillis(Long.parseLong(options.getOrDefault(
                        "offset-flush-millis", String.valueOf(OutboxCdc.DEFAULT_OFFSET_FLUSH_INTERVAL.toMillis())))),
                Integer.parseInt(options.getOrDefault("batch", String.valueOf(OutboxDispatcher.DEFAULT_BATCH_SIZE))));
        int largestFleet = Math.max(
                instanceCount, idleFleets.stream().max(Integer::compare).orElse(1));

        double loadAtStart = OutboxBenchmark.loadAverage();
        Instant startedAt = Instant.now().truncatedTo(ChronoUnit.SECONDS);
        OutboxBenchmark.createDatabaseIfMissing(jdbcUrl, user);
        EmbeddedKafkaKraftBroker broker = new EmbeddedKafkaKraftBroker(1, 4, TOPIC);
        broker.afterPropertiesSet();
        LagRecorder recorder = new LagRecorder();
        List<Instance> instances = new ArrayList<>();
        KafkaOutboxPublisher publisher = null;
        List<CdcCase> cases = new ArrayList<>();
        try (ClusterProbe probe = new ClusterProbe(jdbcUrl, user)) {
            for (int i = 0; i < largestFleet; i++) {
                instances.add(new Instance(jdbcUrl, user, pool, i));
            }
            SumiSystem.createTable(instances.get(0).dataSource);
            Map<String, Object> config = KafkaOutboxPublisher.producerConfig(
                    Map.of("bootstrap.servers", broker.getBrokersAsString(), "client.id", "bench-cdc-outbox"),
                    KafkaOutboxPublisher.DEFAULT_SEND_TIMEOUT);
            KafkaOutboxPublisher shared = KafkaOutboxPublisher.of(
                    () -> new SumiSystem.TimedProducer(config, recorder), KafkaOutboxPublisher.DEFAULT_SEND_TIMEOUT);
            publisher = shared;
            SlotControl slot = new SlotControl(instances.get(0).dataSource, settings.slot());
            slot.drop(); // left by an interrupted run
            probe.bindDatabase();

            System.out.printf(
                    Locale.ROOT,
                    "CDC vs polling benchmark (issue 21): %s UTC, Java %s, %d cores, load average %.2f at the start;"
                            + " %s (PostgreSQL %s, wal_level %s, postmaster pid %d, pg_stat_statements %s)%n",
                    startedAt,
                    System.getProperty("java.version"),
                    Runtime.getRuntime().availableProcessors(),
                    loadAtStart,
                    jdbcUrl,
                    probe.serverVersion,
                    probe.walLevel,
                    probe.postmasterPid,
                    probe.statements ? "on" : "OFF (statements not counted)");
            if (!"logical".equals(probe.walLevel)) {
                throw new IllegalStateException("The CDC path needs wal_level = logical, " + jdbcUrl + " runs "
                        + probe.walLevel + ": start the private cluster with benchmarks/logical-postgres.sh start");
            }
            System.out.printf(
                    Locale.ROOT,
                    "  rates %s rows/s, %d s each after %d s of warm-up at the rate, %d writer threads, %d aggregates,"
                            + " %d instances of %d connections; backlog %,d; idle %d s after %d s%n",
                    rates,
                    seconds,
                    warmupSeconds,
                    writers,
                    aggregates,
                    instanceCount,
                    pool,
                    backlog,
                    idleSeconds,
                    idleSettle);
            System.out.printf(
                    Locale.ROOT,
                    "  polling: dispatcher defaults (batch %d, pipeline depth %d, poll %d ms doubling to %d s when idle,"
                            + " no poll delay), woken after each commit of its own instance%n",
                    settings.batchSize(),
                    OutboxDispatcher.DEFAULT_PIPELINE_DEPTH,
                    OutboxDispatcher.DEFAULT_MIN_POLL_INTERVAL.toMillis(),
                    OutboxDispatcher.DEFAULT_MAX_POLL_INTERVAL.toSeconds());
            System.out.printf(
                    Locale.ROOT,
                    "  CDC: OutboxCdc (slot %s; take-over %d ms, heartbeat %d s, offset flush %d ms), the dispatcher"
                            + " beside it polls every %d s with a %d s poll delay, no wake-up after commit; each batch"
                            + " of the log goes through dispatchAmong in rounds of the batch size%n",
                    settings.slot(),
                    settings.takeOver().toMillis(),
                    settings.heartbeat().toSeconds(),
                    settings.offsetFlush().toMillis(),
                    settings.cdcPollingInterval().toSeconds(),
                    settings.cdcPollingDelay().toSeconds());
            System.out.println("  producer: KafkaOutboxPublisher.producerConfig (idempotent, acks=all, linger.ms 0),"
                    + " one publisher shared by every dispatcher of the run");

            Map<String, CdcCase> lagCases = new LinkedHashMap<>();
            for (String name : caseNames) {
                boolean cdc = name.startsWith("cdc");
                boolean fleet = name.endsWith("-" + instanceCount);
                if (!name.equals("polling-own")
                        && !name.equals("cdc-own")
                        && !name.equals("polling-" + instanceCount)
                        && !name.equals("cdc-" + instanceCount)) {
                    throw new IllegalArgumentException("Unknown case " + name);
                }
                CdcCase c = new CdcCase(
                        name,
                        cdc,
                        fleet ? instances.subList(0, instanceCount) : instances.subList(0, 1),
                        instances.subList(0, 1),
                        shared,
                        settings);
                cases.add(c);
                lagCases.put(name, c);
            }

            // ---------------------------------------------------------------- lag
            Map<String, double[]> lags = new LinkedHashMap<>();
            if (phases.contains("lag")) {
                // JIT warm-up of both paths, unmeasured.
                for (CdcCase c : lagCases.values()) {
                    if (c.name.endsWith("-own")) {
                        c.truncate();
                        c.startLive();
                        OutboxBenchmark.paced(
                                c,
                                "jit-" + c.name,
                                rates.get(0),
                                (long) rates.get(0) * warmupSeconds,
                                writers,
                                aggregates);
                        OutboxBenchmark.awaitDrained(c, 60);
                        c.pause();
                        slot.drop();
                    }
                }
                for (int rate : rates) {
                    for (CdcCase c : lagCases.values()) {
                        c.truncate();
                        c.startLive();
                        Tracer tracer = trace ? Tracer.start(c, recorder) : null;
                        Analyzer analyzer =
                                analyzeEvery > 0 ? Analyzer.start(instances.get(0).dataSource, analyzeEvery) : null;
                        String phase = "lag-" + rate + "-" + c.name;
                        OutboxBenchmark.paced(
                                c, "warm-" + phase, rate, (long) rate * warmupSeconds, writers, aggregates);
                        recorder.reset(phase);
                        long total = (long) rate * seconds;
                        ClusterProbe.Snapshot before = probe.snapshot();
                        double offered = OutboxBenchmark.paced(c, phase, rate, total, writers, aggregates);
                        ClusterProbe.Snapshot after = probe.snapshot();
                        long deadline = System.nanoTime() + 30_000_000_000L;
                        while (recorder.ackedInPhase() < total && System.nanoTime() < deadline) {
                            Thread.sleep(20);
                        }
                        double[] p = recorder.percentilesMillis();
                        long acked = recorder.ackedInPhase();
                        long left = OutboxBenchmark.awaitDrained(c, 60);
                        long written = (long) rate * warmupSeconds + total;
                        long byCdc = c.cdcRowsSent();
                        if (tracer != null) {
                            tracer.stop();
                        }
                        if (analyzer != null) {
                            analyzer.stop();
                        }
                        c.pause();
                        slot.drop();
                        double cpu = 100 * ClusterProbe.cpuCores(before, after);
                        lags.put(c.name + "@" + rate, new double[] {
                            p[0], p[1], p[2], p[3], offered, acked, total, cpu, byCdc, written, left
                        });
                        System.out.printf(
                                Locale.ROOT,
                                "lag %5d/s %-12s p50 %7.1f ms  p95 %7.1f ms  p99 %7.1f ms  max %7.1f ms  (offered %.0f"
                                        + " rows/s, acked %,d of %,d in 30 s; database CPU %.0f %% of a core%s%s)%n",
                                rate,
                                c.name,
                                p[0],
                                p[1],
                                p[2],
                                p[3],
                                offered,
                                acked,
                                total,
                                cpu,
                                c.cdc
                                        ? String.format(
                                                Locale.ROOT,
                                                "; the log sent %,d of the %,d rows written with the warm-up",
                                                byCdc,
                                                written)
                                        : "",
                                left > 0
                                        ? String.format(Locale.ROOT, "; %,d STILL UNDISPATCHED after 60 s", left)
                                        : "");
                    }
                }
            }

            // ---------------------------------------------------------------- drain
            Map<String, double[]> drains = new LinkedHashMap<>();
            if (phases.contains("drain")) {
                for (String name : List.of("polling-own", "cdc-own")) {
                    CdcCase c = lagCases.containsKey(name)
                            ? lagCases.get(name)
                            : register(
                                    cases,
                                    new CdcCase(
                                            name,
                                            name.startsWith("cdc"),
                                            instances.subList(0, 1),
                                            instances.subList(0, 1),
                                            shared,
                                            settings));
                    c.truncate();
                    long loadStart = System.nanoTime();
                    c.loadBacklog("backlog-" + name, backlog, aggregates);
                    double loadSeconds = (System.nanoTime() - loadStart) / 1e9;
                    recorder.reset("backlog-" + name);
                    ClusterProbe.Snapshot before = probe.snapshot();
                    long start = System.nanoTime();
                    c.startDrain();
                    long left = OutboxBenchmark.awaitDrained(c, drainTimeout);
                    double elapsed = (System.nanoTime() - start) / 1e9;
                    ClusterProbe.Snapshot after = probe.snapshot();
                    double streamingAfter = c.streamingAfterSeconds;
                    long byCdc = c.cdcRowsSent();
                    c.pause();
                    slot.drop();
                    double rowsPerSecond = (backlog - left) / elapsed;
                    double cpu = 100 * ClusterProbe.cpuCores(before, after);
                    drains.put(name, new double[] {rowsPerSecond, left, elapsed, cpu, byCdc, streamingAfter});
                    System.out.printf(
                            Locale.ROOT,
                            "drain %-12s %,9.0f rows/s  (%,d rows in %.2f s%s; load took %.1f s; database CPU %.0f %% of"
                                    + " a core%s)%n",
                            name,
                            rowsPerSecond,
                            backlog - left,
                            elapsed,
                            left > 0 ? ", TIMED OUT with " + left + " left" : "",
                            loadSeconds,
                            cpu,
                            c.cdc
                                    ? String.format(
                                            Locale.ROOT,
                                            "; the engine streamed %.2f s after the start; the log sent %,d",
                                            streamingAfter,
                                            byCdc)
                                    : "");
                }
            }

            // ---------------------------------------------------------------- idle
            Map<String, double[]> idles = new LinkedHashMap<>();
            Map<String, List<String>> idleStatements = new LinkedHashMap<>();
            if (phases.contains("idle")) {
                for (int fleet : idleFleets) {
                    for (boolean cdc : new boolean[] {false, true}) {
                        String name = (cdc ? "cdc" : "polling") + " x" + fleet;
                        List<Instance> on = instances.subList(0, fleet);
                        CdcCase c = register(cases, new CdcCase(name, cdc, on, on, shared, settings));
                        c.truncate();
                        c.startLive();
                        probe.checkpoint();
                        Thread.sleep(idleSettle * 1000L);
                        ClusterProbe.Snapshot before = probe.snapshot();
                        Thread.sleep(idleSeconds * 1000L);
                        ClusterProbe.Snapshot after = probe.snapshot();
                        c.pause();
                        slot.drop();
                        double window = (after.nanos() - before.nanos()) / 1e9;
                        double cpu = 100 * ClusterProbe.cpuCores(before, after);
                        double statements = (after.statementCalls() - before.statementCalls()) / window;
                        double xacts = (after.xacts() - before.xacts()) / window;
                        idles.put(name, new double[] {cpu, statements, xacts, window, fleet});
                        idleStatements.put(name, ClusterProbe.topStatements(before, after, window, 8));
                        System.out.printf(
                                Locale.ROOT,
                                "idle %-12s database CPU %.2f %% of a core (%.2f s in %.0f s), %.2f statements/s, %.2f"
                                        + " transactions/s%n",
                                name,
                                cpu,
                                after.cpuSeconds() - before.cpuSeconds(),
                                window,
                                statements,
                                xacts);
                        for (String line : idleStatements.get(name)) {
                            System.out.println("      " + line);
                        }
                    }
                }
            }

            report(rates, lagCases, instanceCount, lags, drains, idles);
            System.out.printf(
                    Locale.ROOT,
                    "%nLoad average (1 min): %.2f at the start, %.2f at the end; %s UTC%n",
                    loadAtStart,
                    OutboxBenchmark.loadAverage(),
                    Instant.now().truncatedTo(ChronoUnit.SECONDS));
        } finally {
            for (CdcCase c : cases) {
                try {
                    c.close();
                } catch (Exception ex) {
                    System.err.println("Closing " + c.name + ": " + ex);
                }
            }
            if (!instances.isEmpty()) {
                try {
                    new SlotControl(instances.get(0).dataSource, settings.slot()).drop();
                } catch (Exception ex) {
                    System.err.println("Dropping the slot: " + ex);
                }
            }
            if (publisher != null) {
                publisher.close();
            }
            for (Instance instance : instances) {
                instance.close();
            }
            broker.destroy();
        }
        System.exit(0);
    }

    private static CdcCase register(List<CdcCase> cases, CdcCase c) {
        cases.add(c);
        return c;
    }

    // ---------------------------------------------------------------- the report

    private static void report(
            List<Integer> rates,
            Map<String, CdcCase> lagCases,
            int instanceCount,
            Map<String, double[]> lags,
            Map<String, double[]> drains,
            Map<String, double[]> idles) {
        String fleet = "-" + instanceCount;
        if (!lags.isEmpty()) {
            System.out.println();
            System.out.println("| rate | case | offered rows/s | acked | p50 ms | p95 ms | p99 ms | max ms |"
                    + " database CPU | rows the log sent |");
            System.out.println("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
            for (int rate : rates) {
                for (String name : lagCases.keySet()) {
                    double[] l = lags.get(name + "@" + rate);
                    if (l == null) {
                        continue;
                    }
                    System.out.printf(
                            Locale.ROOT,
                            "| %,d | %s | %,.0f | %,d of %,d | %.1f | %.1f | %.1f | %.1f | %.0f %% | %s |%n",
                            rate,
                            name,
                            l[4],
                            (long) l[5],
                            (long) l[6],
                            l[0],
                            l[1],
                            l[2],
                            l[3],
                            l[7],
                            name.startsWith("cdc")
                                    ? String.format(Locale.ROOT, "%,d of %,d", (long) l[8], (long) l[9])
                                    : "—");
                }
            }
            System.out.println();
            System.out.println("| rate | instances | p50 CDC/polling | p95 CDC/polling | p99 CDC/polling |"
                    + " max CDC/polling |");
            System.out.println("| ---: | --- | ---: | ---: | ---: | ---: |");
            for (int rate : rates) {
                for (String topology : List.of("-own", fleet)) {
                    double[] cdc = lags.get("cdc" + topology + "@" + rate);
                    double[] polling = lags.get("polling" + topology + "@" + rate);
                    if (cdc == null || polling == null) {
                        continue;
                    }
                    StringBuilder row = new StringBuilder(String.format(
                            Locale.ROOT,
                            "| %,d | %s |",
                            rate,
                            topology.equals("-own")
                                    ? "(a) the writer's own"
                                    : "(b) " + instanceCount + ", one dispatches"));
                    for (int i = 0; i < 4; i++) {
                        row.append(' ').append(ratio(cdc[i], polling[i])).append(" |");
                    }
                    System.out.println(row);
                }
            }
        }
        if (!drains.isEmpty()) {
            System.out.println();
            System.out.println("| backlog drain | rows/s | time | database CPU |");
            System.out.println("| --- | ---: | ---: | ---: |");
            for (Map.Entry<String, double[]> e : drains.entrySet()) {
                double[] d = e.getValue();
                System.out.printf(
                        Locale.ROOT,
                        "| %s | %,.0f%s | %.2f s | %.0f %% |%n",
                        e.getKey(),
                        d[0],
                        d[1] > 0 ? " (timed out)" : "",
                        d[2],
                        d[3]);
            }
            double[] cdc = drains.get("cdc-own");
            double[] polling = drains.get("polling-own");
            if (cdc != null && polling != null) {
                System.out.println("CDC/polling drain rate: " + ratio(cdc[0], polling[0]));
            }
        }
        if (!idles.isEmpty()) {
            System.out.println();
            System.out.println("| idle | database CPU, percent of a core | statements/s | transactions/s |");
            System.out.println("| --- | ---: | ---: | ---: |");
            for (Map.Entry<String, double[]> e : idles.entrySet()) {
                double[] d = e.getValue();
                System.out.printf(Locale.ROOT, "| %s | %.2f | %.2f | %.2f |%n", e.getKey(), d[0], d[1], d[2]);
            }
            for (Map.Entry<String, double[]> e : idles.entrySet()) {
                if (!e.getKey().startsWith("cdc")) {
                    continue;
                }
                double[] cdc = e.getValue();
                double[] polling = idles.get(e.getKey().replace("cdc", "polling"));
                if (polling != null) {
                    System.out.printf(
                            Locale.ROOT,
                            "CDC/polling at idle, %d instance(s): CPU %s, statements %s, transactions %s%n",
                            (int) cdc[4],
                            ratio(cdc[0], polling[0]),
                            ratio(cdc[1], polling[1]),
                            ratio(cdc[2], polling[2]));
                }
            }
        }
        System.out.println();
        double[] target = lags.get("cdc" + fleet + "@1000");
        if (target != null) {
            System.out.println(OutboxBenchmark.verdict(
                    "p99 created -> acked <= 50 ms, case (b) (" + instanceCount
                            + " instances write, one dispatches), CDC, 1,000 rows/s",
                    target[2] <= 50 && target[5] == target[6],
                    String.format(
                            Locale.ROOT,
                            "%.1f ms (offered %.0f rows/s, acked %,d of %,d)",
                            target[2],
                            target[4],
                            (long) target[5],
                            (long) target[6])));
        }
        double[] pollingB = lags.get("polling" + fleet + "@1000");
        if (pollingB != null) {
            System.out.println(OutboxBenchmark.verdict(
                    "(for comparison) the same target by polling",
                    pollingB[2] <= 50 && pollingB[5] == pollingB[6],
                    String.format(Locale.ROOT, "%.1f ms", pollingB[2])));
        }
        for (Map.Entry<String, double[]> e : idles.entrySet()) {
            if (!e.getKey().startsWith("cdc")) {
                continue;
            }
            double[] cdc = e.getValue();
            double[] polling = idles.get(e.getKey().replace("cdc", "polling"));
            if (polling == null) {
                continue;
            }
            System.out.println(OutboxBenchmark.verdict(
                    "idle database CPU, CDC below polling, " + (int) cdc[4] + " instance(s)",
                    cdc[0] < polling[0],
                    String.format(Locale.ROOT, "%.2f vs %.2f %% of a core", cdc[0], polling[0])));
            System.out.println(OutboxBenchmark.verdict(
                    "idle statements/s, CDC below polling, " + (int) cdc[4] + " instance(s)",
                    cdc[1] < polling[1],
                    String.format(Locale.ROOT, "%.2f vs %.2f statements/s", cdc[1], polling[1])));
        }
    }

    /** {@code a / b} to two decimals; "n/a" when {@code b} is zero (nothing measured to divide by). */
    private static String ratio(double a, double b) {
        return b == 0
                ? "n/a (" + String.format(Locale.ROOT, "%.2f", a) + " / 0)"
                : String.format(Locale.ROOT, "%.2f", a / b);
    }

    private static List<Integer> ints(String list) {
        List<Integer> values = new ArrayList<>();
        for (String value : words(list)) {
            values.add(Integer.parseInt(value));
        }
        return values;
    }

    private static List<String> words(String list) {
        List<String> values = new ArrayList<>();
        for (String value : list.split(",", -1)) {
            if (!value.isBlank()) {
                values.add(value.trim());
            }
        }
        return values;
    }

    // ---------------------------------------------------------------- the parts

    /** One application instance's side of the database: a pool, a table, a transaction template. */
    static final class Instance implements AutoCloseable {

        final int index;
        final HikariDataSource dataSource;
        final OutboxTable table;
        final TransactionTemplate tx;

        Instance(String jdbcUrl, String user, int pool, int index) {
            this.index = index;
            HikariConfig hikari = new HikariConfig();
            hikari.setJdbcUrl(jdbcUrl);
            hikari.setUsername(user);
            hikari.setMaximumPoolSize(pool);
            hikari.setMinimumIdle(1);
            hikari.setPoolName("cdc-bench-instance-" + index);
            this.dataSource = new HikariDataSource(hikari);
            this.table = OutboxTable.of(dataSource);
            this.tx = new TransactionTemplate(new DataSourceTransactionManager(dataSource));
        }

        @Override
        public void close() {
            dataSource.close();
        }
    }

    /** The replication slot and its stored offsets: dropped between cases, so each CDC case starts on a new slot. */
    static final class SlotControl {

        private final javax.sql.DataSource dataSource;
        private final String slot;

        SlotControl(javax.sql.DataSource dataSource, String slot) {
            this.dataSource = dataSource;
            this.slot = slot;
        }

        boolean active() throws SQLException {
            try (Connection connection = dataSource.getConnection();
                    PreparedStatement statement = connection.prepareStatement(
                            "SELECT active FROM pg_replication_slots WHERE slot_name = ?")) {
                statement.setString(1, slot);
                try (ResultSet rs = statement.executeQuery()) {
                    return rs.next() && rs.getBoolean(1);
                }
            }
        }

        /** Waits until nobody streams the slot (at most {@code seconds}); whether that happened. */
        boolean awaitInactive(int seconds) throws Exception {
            long deadline = System.nanoTime() + seconds * 1_000_000_000L;
            while (active()) {
                if (System.nanoTime() > deadline) {
                    return false;
                }
                Thread.sleep(50);
            }
            return true;
        }

        /** Drops the slot and the engine's offsets, if they exist. */
        void drop() throws Exception {
            if (!awaitInactive(60)) {
                throw new IllegalStateException("Replication slot " + slot + " is still streamed after 60 s");
            }
            try (Connection connection = dataSource.getConnection()) {
                try (PreparedStatement statement = connection.prepareStatement(
                        "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = ?")) {
                    statement.setString(1, slot);
                    statement.execute();
                }
                boolean offsets;
                try (Statement statement = connection.createStatement();
                        ResultSet rs =
                                statement.executeQuery("SELECT to_regclass('sumi_outbox_cdc_offsets') IS NOT NULL")) {
                    offsets = rs.next() && rs.getBoolean(1);
                }
                if (offsets) {
                    try (PreparedStatement statement =
                            connection.prepareStatement("DELETE FROM sumi_outbox_cdc_offsets WHERE store_name = ?")) {
                        statement.setString(1, slot);
                        statement.execute();
                    }
                }
            }
        }
    }

    /**
     * One case: which instances write, which dispatch, and how. Each dispatching instance has its
     * own {@link OutboxDispatcher} (built once); under CDC each also gets a new {@link OutboxCdc}
     * at every start (a stopped one does not start again).
     */
    static final class CdcCase implements OutboxSystem {

        final String name;
        final boolean cdc;
        private final List<Instance> writeTo;
        private final List<Instance> dispatchOn;
        private final Settings settings;
        private final List<OutboxDispatcher> dispatchers = new ArrayList<>();
        private final List<Outbox> outboxes = new ArrayList<>();
        private final List<OutboxCdc> engines = new ArrayList<>();
        private final SlotControl slot;
        final java.util.concurrent.atomic.AtomicLong appended = new java.util.concurrent.atomic.AtomicLong();
        volatile double streamingAfterSeconds = Double.NaN;

        CdcCase(
                String name,
                boolean cdc,
                List<Instance> writeTo,
                List<Instance> dispatchOn,
                KafkaOutboxPublisher publisher,
                Settings settings) {
            this.name = name;
            this.cdc = cdc;
            this.writeTo = List.copyOf(writeTo);
            this.dispatchOn = List.copyOf(dispatchOn);
            this.settings = settings;
            this.slot = new SlotControl(dispatchOn.get(0).dataSource, settings.slot());
            Map<Integer, OutboxDispatcher> byInstance = new HashMap<>();
            for (Instance instance : this.dispatchOn) {
                OutboxDispatcher.Builder builder =
                        OutboxDispatcher.builder(instance.table, publisher).batchSize(settings.batchSize());
                if (cdc) {
                    // As the starter sets it under CDC: polling is the safety net.
                    builder.minPollInterval(settings.cdcPollingInterval())
                            .maxPollInterval(settings.cdcPollingInterval())
                            .pollDelay(settings.cdcPollingDelay());
                }
                OutboxDispatcher dispatcher = builder.build();
                dispatchers.add(dispatcher);
                byInstance.put(instance.index, dispatcher);
            }
            for (Instance instance : this.writeTo) {
                OutboxDispatcher local = byInstance.get(instance.index);
                Outbox.Builder outbox = Outbox.builder(instance.table);
                if (!cdc && local != null) {
                    // The polling dispatcher's fast path: woken after each commit on its own instance.
                    outbox.afterCommit(local::wakeUp);
                }
                outboxes.add(outbox.build());
            }
        }

        @Override
        public String name() {
            return name;
        }

        @Override
        public String settings() {
            return (cdc ? "CDC" : "polling") + ", " + writeTo.size() + " writing instance(s), " + dispatchOn.size()
                    + " dispatching";
        }

        @Override
        public void truncate() throws Exception {
            SumiSystem.resetTable(writeTo.get(0).dataSource);
        }

        @Override
        public void loadBacklog(String phase, int rows, int aggregates) throws Exception {
            if (cdc) {
                // The slot must exist before the backlog is written, for the log to hold it.
                startEngines();
                stopEngines();
            }
            Outbox plain = Outbox.builder(writeTo.get(0).table).build();
            int chunk = 1000;
            for (int from = 0; from < rows; from += chunk) {
                List<OutboxMessage> messages = new ArrayList<>(chunk);
                for (int seq = from; seq < Math.min(rows, from + chunk); seq++) {
                    String aggregate = Payloads.aggregate(seq, aggregates);
                    messages.add(OutboxMessage.of(aggregate, TOPIC, Payloads.create(phase, seq, aggregate)));
                }
                writeTo.get(0).tx.executeWithoutResult(status -> plain.appendAll(messages));
            }
            try (Connection connection = writeTo.get(0).dataSource.getConnection();
                    Statement statement = connection.createStatement()) {
                statement.execute("ANALYZE outbox");
            }
        }

        @Override
        public void startDrain() throws Exception {
            if (cdc) {
                startEngines(); // alone: the polling dispatcher stays stopped
            } else {
                dispatchers.forEach(OutboxDispatcher::start);
            }
        }

        @Override
        public void startLive() throws Exception {
            dispatchers.forEach(OutboxDispatcher::start);
            if (cdc) {
                startEngines();
            }
        }

        /** Starts an {@link OutboxCdc} per dispatching instance and waits until one streams the slot. */
        private void startEngines() throws Exception {
            engines.clear(); // stopped by stopEngines
            long start = System.nanoTime();
            for (OutboxDispatcher dispatcher : dispatchers) {
                OutboxCdc engine = OutboxCdc.builder(dispatcher, settings.jdbcUrl())
                        .user(settings.user())
                        .slotName(settings.slot())
                        .publicationName(settings.slot())
                        .takeOverInterval(settings.takeOver())
                        .heartbeatInterval(settings.heartbeat())
                        .offsetFlushInterval(settings.offsetFlush())
                        .build();
                engines.add(engine);
                engine.start();
            }
            long deadline = start + 60_000_000_000L;
            while (!(engines.stream().anyMatch(OutboxCdc::isStreaming) && slot.active())) {
                if (System.nanoTime() > deadline) {
                    Throwable failure = engines.get(0).lastFailure();
                    throw new IllegalStateException("No OutboxCdc streams the slot after 60 s", failure);
                }
                Thread.sleep(5);
            }
            streamingAfterSeconds = (System.nanoTime() - start) / 1e9;
        }

        private void stopEngines() throws Exception {
            for (OutboxCdc engine : engines) {
                engine.stop(Duration.ofSeconds(30));
            }
            if (!slot.awaitInactive(60)) {
                throw new IllegalStateException("The slot is still streamed 60 s after the engines stopped");
            }
        }

        /** Rows the engines of the current (or last) start read from the log. */
        long cdcRowsSeen() {
            long seen = 0;
            for (OutboxCdc engine : engines) {
                seen += engine.rowsSeen();
            }
            return seen;
        }

        /** Rows the engines of the current (or last) start sent from the log. */
        long cdcRowsSent() {
            long sent = 0;
            for (OutboxCdc engine : engines) {
                sent += engine.rowsSent();
            }
            return sent;
        }

        @Override
        public void pause() throws Exception {
            if (cdc && !engines.isEmpty()) {
                stopEngines();
            }
            for (OutboxDispatcher dispatcher : dispatchers) {
                dispatcher.stop(Duration.ofSeconds(30));
            }
        }

        @Override
        public long undispatched() throws Exception {
            return SumiSystem.undispatchedIn(writeTo.get(0).dataSource);
        }

        @Override
        public void appendOne(String phase, long seq, String aggregateId) {
            appended.incrementAndGet();
            int i = (int) (seq % writeTo.size());
            Outbox outbox = outboxes.get(i);
            writeTo.get(i)
                    .tx
                    .executeWithoutResult(status -> outbox.append(
                            OutboxMessage.of(aggregateId, TOPIC, Payloads.create(phase, seq, aggregateId))));
        }

        @Override
        public void close() {
            for (OutboxCdc engine : engines) {
                engine.stop(Duration.ofSeconds(30));
            }
            for (OutboxDispatcher dispatcher : dispatchers) {
                dispatcher.close();
            }
        }
    }

    /** Runs {@code ANALYZE outbox} every few seconds (option {@code analyze-every}). */
    static final class Analyzer {

        private final Thread thread;
        private volatile boolean stopped;

        private Analyzer(javax.sql.DataSource dataSource, int seconds) {
            this.thread = new Thread(
                    () -> {
                        while (!stopped) {
                            try {
                                Thread.sleep(seconds * 1000L);
                                try (Connection connection = dataSource.getConnection();
                                        Statement statement = connection.createStatement()) {
                                    statement.execute("ANALYZE outbox");
                                }
                            } catch (InterruptedException ex) {
                                return;
                            } catch (SQLException ex) {
                                System.out.println("  ANALYZE failed: " + ex);
                            }
                        }
                    },
                    "cdc-bench-analyze");
            thread.setDaemon(true);
        }

        static Analyzer start(javax.sql.DataSource dataSource, int seconds) {
            Analyzer analyzer = new Analyzer(dataSource, seconds);
            analyzer.thread.start();
            return analyzer;
        }

        void stop() throws InterruptedException {
            stopped = true;
            thread.interrupt();
            thread.join(5000);
        }
    }

    /** Prints a case's progress every second (option {@code trace}): where the rows are. */
    static final class Tracer {

        private final Thread thread;
        private volatile boolean stopped;

        private Tracer(CdcCase c, LagRecorder recorder) {
            long start = System.nanoTime();
            long appendedAtStart = c.appended.get();
            long ackedAtStart = recorder.ackedTotal();
            this.thread = new Thread(
                    () -> {
                        while (!stopped) {
                            try {
                                Thread.sleep(1000);
                                System.out.printf(
                                        Locale.ROOT,
                                        "  trace %-12s %5.1f s: written %,7d, log read %,7d, log sent %,7d, acked %,7d,"
                                                + " undispatched %,7d%n",
                                        c.name,
                                        (System.nanoTime() - start) / 1e9,
                                        c.appended.get() - appendedAtStart,
                                        c.cdcRowsSeen(),
                                        c.cdcRowsSent(),
                                        recorder.ackedTotal() - ackedAtStart,
                                        c.undispatched());
                            } catch (InterruptedException ex) {
                                return;
                            } catch (Exception ex) {
                                System.out.println("  trace failed: " + ex);
                            }
                        }
                    },
                    "cdc-bench-trace");
            thread.setDaemon(true);
        }

        static Tracer start(CdcCase c, LagRecorder recorder) {
            Tracer tracer = new Tracer(c, recorder);
            tracer.thread.start();
            return tracer;
        }

        void stop() throws InterruptedException {
            stopped = true;
            thread.interrupt();
            thread.join(5000);
        }
    }

    /**
     * Reads the cluster's load: its CPU time from /proc, and from a connection to its maintenance
     * database {@code postgres} (so the readings are not counted in the benchmark's database) the
     * statements {@code pg_stat_statements} saw in the benchmark's database and its transactions.
     */
    static final class ClusterProbe implements AutoCloseable {

        record Snapshot(
                long nanos,
                double cpuSeconds,
                long xacts,
                long statementCalls,
                Map<Long, Long> calls,
                Map<Long, String> text) {}

        private final Connection connection;
        private final String database;
        final String serverVersion;
        final String walLevel;
        final long postmasterPid;
        boolean statements;
        private long databaseOid = -1;

        ClusterProbe(String jdbcUrl, String user) throws SQLException {
            int slash = jdbcUrl.lastIndexOf('/');
            this.database = jdbcUrl.substring(slash + 1).replaceAll("\\?.*", "");
            this.connection = DriverManager.getConnection(jdbcUrl.substring(0, slash + 1) + "postgres", user, null);
            this.serverVersion = one("SHOW server_version");
            this.walLevel = one("SHOW wal_level");
            this.postmasterPid = CpuMonitor.parentPid(Long.parseLong(one("SELECT pg_backend_pid()")));
            try (Statement statement = connection.createStatement()) {
                statement.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
                statement
                        .executeQuery("SELECT count(*) FROM pg_stat_statements")
                        .close();
                statements = true;
            } catch (SQLException ex) {
                statements = false; // not in shared_preload_libraries
            }
        }

        /** Looks the benchmark's database up (it exists by now). */
        void bindDatabase() throws SQLException {
            try (PreparedStatement statement =
                    connection.prepareStatement("SELECT oid FROM pg_database WHERE datname = ?")) {
                statement.setString(1, database);
                try (ResultSet rs = statement.executeQuery()) {
                    rs.next();
                    databaseOid = rs.getLong(1);
                }
            }
        }

        private String one(String sql) throws SQLException {
            try (Statement statement = connection.createStatement();
                    ResultSet rs = statement.executeQuery(sql)) {
                rs.next();
                return rs.getString(1);
            }
        }

        void checkpoint() throws SQLException {
            try (Statement statement = connection.createStatement()) {
                statement.execute("CHECKPOINT");
            }
        }

        Snapshot snapshot() throws SQLException {
            long nanos = System.nanoTime();
            double cpu = CpuMonitor.clusterCpuSeconds(postmasterPid);
            long xacts;
            try (PreparedStatement statement = connection.prepareStatement(
                    "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = ?")) {
                statement.setString(1, database);
                try (ResultSet rs = statement.executeQuery()) {
                    rs.next();
                    xacts = rs.getLong(1);
                }
            }
            Map<Long, Long> calls = new HashMap<>();
            Map<Long, String> text = new HashMap<>();
            long total = 0;
            if (statements) {
                try (PreparedStatement statement = connection.prepareStatement(
                        "SELECT queryid, sum(calls), min(query) FROM pg_stat_statements WHERE dbid = ? GROUP BY queryid")) {
                    statement.setLong(1, databaseOid);
                    try (ResultSet rs = statement.executeQuery()) {
                        while (rs.next()) {
                            calls.put(rs.getLong(1), rs.getLong(2));
                            text.put(rs.getLong(1), rs.getString(3));
                            total += rs.getLong(2);
                        }
                    }
                }
            }
            return new Snapshot(nanos, cpu, xacts, statements ? total : -1, calls, text);
        }

        /** Cores' worth of the cluster's CPU between two snapshots. */
        static double cpuCores(Snapshot before, Snapshot after) {
            return (after.cpuSeconds() - before.cpuSeconds()) / ((after.nanos() - before.nanos()) / 1e9);
        }

        /** The statements run most between two snapshots, as "calls/s  text" lines. */
        static List<String> topStatements(Snapshot before, Snapshot after, double seconds, int limit) {
            List<Map.Entry<Long, Long>> deltas = new ArrayList<>();
            for (Map.Entry<Long, Long> e : after.calls().entrySet()) {
                long delta = e.getValue() - before.calls().getOrDefault(e.getKey(), 0L);
                if (delta > 0) {
                    deltas.add(Map.entry(e.getKey(), delta));
                }
            }
            deltas.sort(Comparator.comparing(Map.Entry<Long, Long>::getValue).reversed());
            List<String> lines = new ArrayList<>();
            for (Map.Entry<Long, Long> e : deltas.subList(0, Math.min(limit, deltas.size()))) {
                String sql = after.text()
                        .getOrDefault(e.getKey(), "?")
                        .replaceAll("\\s+", " ")
                        .trim();
                lines.add(String.format(
                        Locale.ROOT,
                        "%6.2f/s (%d)  %s",
                        e.getValue() / seconds,
                        e.getValue(),
                        sql.length() > 110 ? sql.substring(0, 110) + "…" : sql));
            }
            return lines;
        }

        @Override
        public void close() throws SQLException {
            connection.close();
        }
    }
}
