package io.sumi.benchmarks;

import com.zaxxer.hikari.HikariDataSource;
import io.sumi.benchmarks.BenchmarkCase.Operation;
import io.sumi.benchmarks.BenchmarkCase.Role;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * Throughput of the ledger, ids per second from one client thread, against one PostgreSQL in one
 * run: raw JDBC (the physical limit), Sumi's store and executor in each mode, Apache Camel's and
 * Spring Integration's JDBC idempotency stores. See docs/benchmarks.md.
 *
 * <pre>
 * ./mvnw -B -q -pl benchmarks -am package -DskipTests
 * java -jar benchmarks/target/sumi-benchmarks.jar [ledger|probes] [--warmup=1] [--duration=2.5] [--rounds=3]
 *     [--cases=raw,sumi-tx,...] [--url=jdbc:postgresql://127.0.0.1:5432/sumi_bench] [--user=postgres] [--password=]
 *     [--analyze=true] [--max-other-load=0.25] [--quiet-wait=3] [--retries=1] [--csv=FILE] [--keep-schemas]
 * </pre>
 *
 * Each case has a schema, tables and HikariCP pool of its own; its tables are truncated (and the
 * server checkpointed) before it runs and analyzed after its warm-up. Cases run round-robin,
 * {@code rounds} times, each with its own warm-up; the figure reported is the median of the
 * rounds. The machine has two cores shared by client and server, so the CPU other processes use
 * is measured for every round: the runner waits for a quiet machine before a round, measures a
 * disturbed round again, and leaves rounds that stayed disturbed out of the median.
 */
public final class LedgerBenchmark {

    private static final PrintStream out = System.out;

    /** CPU time of the client thread alone (not the JIT compiler's or the GC's). */
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    private LedgerBenchmark() {}

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("budgets")) {
            BudgetBenchmark.main(java.util.Arrays.copyOfRange(args, 1, args.length));
            return;
        }
        if (args.length > 0 && args[0].equals("scale")) {
            LedgerScaleBenchmark.main(java.util.Arrays.copyOfRange(args, 1, args.length));
            return;
        }
        Options options;
        try {
            options = Options.parse(args);
        } catch (IllegalArgumentException ex) {
            System.err.println(ex.getMessage());
            System.err.println(Options.USAGE);
            System.exit(2);
            return;
        }
        if (options.help) {
            out.println(Options.USAGE);
            return;
        }
        new Runner(options).run();
    }

    // ------------------------------------------------------------------ options

    static final class Options {

        static final String USAGE = """
                Usage: java -jar benchmarks/target/sumi-benchmarks.jar [ledger|probes|budgets|scale] [options]
                  ledger            the comparison: raw insert, Sumi in each mode, Camel, Spring Integration (default)
                  probes            the investigation of Sumi's per-id cost (see docs/benchmarks.md)
                  budgets           the per-call overhead of a fleet budget vs an instance budget (own options:
                                    --rounds=N --calls=N --empty-calls=N --small-chunk=N --url= --user= --password=)
                  scale             claims on a ledger of 10 million rows vs an empty one, and pruning under load
                                    (own options, see LedgerScaleBenchmark and docs/benchmarks.md)
                  --warmup=S        warm-up seconds per case and round (default 1)
                  --duration=S      measured seconds per case and round (default 2.5)
                  --rounds=N        round-robin passes over the cases; the median is reported (default 3)
                  --cases=a,b       only these case ids (default: all of the suite)
                  --url=JDBC_URL    default $SUMI_BENCH_URL or jdbc:postgresql://127.0.0.1:5432/sumi_bench (created if missing)
                  --user=NAME       default $SUMI_BENCH_USER or postgres
                  --password=PW     default $SUMI_BENCH_PASSWORD or empty
                  --analyze=B       ANALYZE the case's tables after its warm-up, as autovacuum does on a live ledger
                                    (default true; false measures tables PostgreSQL has no statistics for)
                  --max-other-load=C  CPU (in cores) other processes may use during a round before it counts as
                                    DISTURBED and is left out of the figures unless all rounds were (default 0.25)
                  --quiet-wait=S    before each round, wait up to S seconds for other load to drop below that (default 3)
                  --retries=N       measure a DISTURBED round again, at most N times (default 1)
                  --csv=FILE        also write the figures per case and round to FILE
                  --keep-schemas    keep the bench_* schemas (emptied) after the run
                """;

        String suite = "ledger";
        double warmupSeconds = 1;
        double durationSeconds = 2.5;
        int rounds = 3;
        Set<String> cases;
        String url = env("SUMI_BENCH_URL", "jdbc:postgresql://127.0.0.1:5432/sumi_bench");
        String user = env("SUMI_BENCH_USER", "postgres");
        String password = env("SUMI_BENCH_PASSWORD", "");
        boolean analyze = true;
        double maxOtherLoad = 0.25;
        double quietWaitSeconds = 3;
        int retries = 1;
        Path csv;
        boolean keepSchemas;
        boolean help;

        static Options parse(String[] args) {
            Options o = new Options();
            for (String arg : args) {
                if (arg.equals("-h") || arg.equals("--help")) {
                    o.help = true;
                } else if (!arg.startsWith("--")) {
                    if (!arg.equals("ledger") && !arg.equals("probes")) {
                        throw new IllegalArgumentException("Unknown suite '" + arg + "'");
                    }
                    o.suite = arg;
                } else if (arg.equals("--keep-schemas")) {
                    o.keepSchemas = true;
                } else {
                    int eq = arg.indexOf('=');
                    if (eq < 0) {
                        throw new IllegalArgumentException("Expected --name=value, got " + arg);
                    }
                    String name = arg.substring(2, eq);
                    String value = arg.substring(eq + 1);
                    switch (name) {
                        case "warmup" -> o.warmupSeconds = Double.parseDouble(value);
                        case "duration" -> o.durationSeconds = Double.parseDouble(value);
                        case "rounds" -> o.rounds = Integer.parseInt(value);
                        case "cases" -> o.cases = Set.copyOf(Arrays.asList(value.split(",")));
                        case "url" -> o.url = value;
                        case "user" -> o.user = value;
                        case "password" -> o.password = value;
                        case "csv" -> o.csv = Path.of(value);
                        case "max-other-load" -> o.maxOtherLoad = Double.parseDouble(value);
                        case "analyze" -> o.analyze = Boolean.parseBoolean(value);
                        case "quiet-wait" -> o.quietWaitSeconds = Double.parseDouble(value);
                        case "retries" -> o.retries = Integer.parseInt(value);
                        default -> throw new IllegalArgumentException("Unknown option --" + name);
                    }
                }
            }
            if (o.durationSeconds <= 0 || o.warmupSeconds < 0 || o.rounds < 1) {
                throw new IllegalArgumentException("--duration must be > 0, --warmup >= 0, --rounds >= 1");
            }
            return o;
        }

        private static String env(String name, String fallback) {
            String value = System.getenv(name);
            return value == null || value.isEmpty() ? fallback : value;
        }
    }

    // ------------------------------------------------------------------ running

    /** One measured round of one case. */
    record Round(
            double rate, double jvmMicrosPerId, double postgresMicrosPerId, double otherCores, boolean disturbed) {}

    /** The figures of one case. */
    static final class Result {
        final BenchmarkCase benchmarkCase;
        final List<Round> rounds = new ArrayList<>();
        final List<String> details = new ArrayList<>();
        int retried;

        Result(BenchmarkCase benchmarkCase) {
            this.benchmarkCase = benchmarkCase;
        }

        /**
         * The rounds the figures come from: those that other work on the machine did not disturb,
         * or all of them if every round was disturbed.
         */
        List<Round> used() {
            List<Round> quiet = rounds.stream().filter(r -> !r.disturbed()).toList();
            return quiet.isEmpty() ? rounds : quiet;
        }

        /** The figure reported: the median of the rounds used. */
        double median() {
            return medianOf(used().stream().map(Round::rate).toList());
        }

        double jvmMicrosPerId() {
            return medianOf(used().stream().map(Round::jvmMicrosPerId).toList());
        }

        double postgresMicrosPerId() {
            return medianOf(used().stream().map(Round::postgresMicrosPerId).toList());
        }

        double meanOtherCores() {
            return used().stream()
                    .mapToDouble(Round::otherCores)
                    .filter(d -> !Double.isNaN(d))
                    .average()
                    .orElse(Double.NaN);
        }

        double min() {
            return used().stream().mapToDouble(Round::rate).min().orElse(Double.NaN);
        }

        double max() {
            return used().stream().mapToDouble(Round::rate).max().orElse(Double.NaN);
        }

        static double medianOf(List<Double> values) {
            double[] sorted = values.stream()
                    .mapToDouble(Double::doubleValue)
                    .filter(d -> !Double.isNaN(d))
                    .sorted()
                    .toArray();
            if (sorted.length == 0) {
                return Double.NaN;
            }
            int mid = sorted.length / 2;
            return sorted.length % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
        }
    }

    static final class Runner {

        private final Options options;
        private final BenchDatabase db;
        private final CpuMonitor cpu;

        Runner(Options options) {
            this.options = options;
            this.db = new BenchDatabase(options.url, options.user, options.password);
            this.cpu = new CpuMonitor(db.databaseName());
        }

        void run() throws Exception {
            List<BenchmarkCase> suite = options.suite.equals("probes") ? ProbeCases.all() : LedgerCases.all();
            List<BenchmarkCase> cases = suite.stream()
                    .filter(c -> options.cases == null || options.cases.contains(c.id))
                    .toList();
            if (options.cases != null) {
                Set<String> known = suite.stream().map(c -> c.id).collect(Collectors.toSet());
                List<String> unknown = options.cases.stream()
                        .filter(id -> !known.contains(id))
                        .sorted()
                        .toList();
                if (!unknown.isEmpty()) {
                    throw new IllegalArgumentException("Unknown case(s) " + unknown + "; the suite has " + suite);
                }
            }
            db.ensureDatabase();
            out.printf(
                    "Sumi ledger benchmark, suite '%s': %d cases x %d rounds, %.1f s warm-up + %.1f s measured each,"
                            + " 1 client thread, tables %s after warm-up%n",
                    options.suite,
                    cases.size(),
                    options.rounds,
                    options.warmupSeconds,
                    options.durationSeconds,
                    options.analyze ? "ANALYZEd" : "not analyzed");
            out.printf("Database: %s%n", db.url());
            db.serverSettings().forEach((k, v) -> out.printf("  %s = %s%n", k, v));
            out.printf(
                    "JVM: %s %s, %d cores%n%n",
                    System.getProperty("java.vm.name"),
                    System.getProperty("java.version"),
                    Runtime.getRuntime().availableProcessors());

            Map<String, Result> results = new LinkedHashMap<>();
            for (BenchmarkCase c : cases) {
                db.prepare(c);
                results.put(c.id, new Result(c));
            }
            Instant started = Instant.now();
            try {
                for (int round = 1; round <= options.rounds; round++) {
                    for (BenchmarkCase c : cases) {
                        Result result = results.get(c.id);
                        // A round that other work disturbed is measured again (at most --retries times).
                        for (int attempt = 0;
                                runOnce(c, round, result).disturbed() && attempt < options.retries;
                                attempt++) {
                            result.rounds.remove(result.rounds.size() - 1);
                            result.retried++;
                        }
                    }
                }
            } finally {
                for (BenchmarkCase c : cases) {
                    try {
                        if (options.keepSchemas) {
                            db.reset(c);
                        } else {
                            db.drop(c);
                        }
                    } catch (Exception ex) {
                        System.err.println("Could not clean up " + c.schema() + ": " + ex);
                    }
                }
            }
            out.printf(
                    "%nMeasured in %d s.%n%n",
                    Duration.between(started, Instant.now()).toSeconds());
            Report report =
                    new Report(new ArrayList<>(results.values()), options.maxOtherLoad, options.suite.equals("ledger"));
            report.print(out);
            if (options.csv != null) {
                writeCsv(results.values());
            }
        }

        // close() throws Exception: an operation closes whatever it opened (pools, threads); the
        // harness lets any failure, interruption included, end the run.
        @SuppressWarnings("try")
        private Round runOnce(BenchmarkCase c, int round, Result result) throws Exception {
            db.reset(c);
            System.gc();
            double waited = waitForQuiet();
            long totalIds = 0;
            long totalOps = 0;
            Round measured;
            String details;
            try (HikariDataSource dataSource = db.pool(c.id);
                    Operation operation = c.open(dataSource, new Ids(System.nanoTime()))) {
                long warmupEnd = System.nanoTime() + (long) (options.warmupSeconds * 1e9);
                while (System.nanoTime() < warmupEnd) {
                    totalIds += operation.run();
                    totalOps++;
                }
                if (options.analyze) {
                    db.analyze(c); // as autovacuum does on a live ledger; invalidates the plans cached so far
                }
                long measuredIds = 0;
                CpuMonitor.Sample before = cpu.sample();
                long threadCpuStart = THREADS.getCurrentThreadCpuTime();
                long start = System.nanoTime();
                long end = start + (long) (options.durationSeconds * 1e9);
                long now = start;
                while (now < end) {
                    measuredIds += operation.run();
                    totalOps++;
                    now = System.nanoTime();
                }
                long threadCpu = THREADS.getCurrentThreadCpuTime() - threadCpuStart;
                CpuMonitor.Sample after = cpu.sample();
                totalIds += measuredIds;
                double others = CpuMonitor.otherCores(before, after);
                measured = new Round(
                        measuredIds / ((now - start) / 1e9),
                        threadCpu / 1e3 / measuredIds,
                        CpuMonitor.postgresSeconds(before, after) * 1e6 / measuredIds,
                        others,
                        others > options.maxOtherLoad);
                details = operation.details(totalOps);
            }
            long stored = db.count(c);
            if (stored != totalIds) {
                throw new IllegalStateException(c.id + ": took " + totalIds + " ids but the table holds " + stored);
            }
            result.rounds.add(measured);
            if (details != null) {
                result.details.add(details);
            }
            out.printf(
                    Locale.ROOT,
                    "round %d  %-20s %,10.0f ids/s  %,9d ids checked in the table  cpu/id: client %5.1f us, pg %5.1f us"
                            + "  other load %.2f cores%s%s%n",
                    round,
                    c.id,
                    measured.rate(),
                    stored,
                    measured.jvmMicrosPerId(),
                    measured.postgresMicrosPerId(),
                    measured.otherCores(),
                    measured.disturbed() ? " DISTURBED" : "",
                    waited > 0 ? String.format(Locale.ROOT, " (waited %.0f s for quiet)", waited) : "");
            return measured;
        }

        /**
         * Waits (at most --quiet-wait seconds) until other processes use at most --max-other-load
         * cores, measured over half a second; returns the seconds waited.
         */
        private double waitForQuiet() throws InterruptedException {
            if (options.quietWaitSeconds <= 0 || !CpuMonitor.available()) {
                return 0;
            }
            long start = System.nanoTime();
            long deadline = start + (long) (options.quietWaitSeconds * 1e9);
            CpuMonitor.Sample previous = cpu.sample();
            do {
                Thread.sleep(500);
                CpuMonitor.Sample current = cpu.sample();
                if (CpuMonitor.otherCores(previous, current) <= options.maxOtherLoad) {
                    break;
                }
                previous = current;
            } while (System.nanoTime() < deadline);
            double waited = (System.nanoTime() - start) / 1e9;
            return waited < 0.6 ? 0 : waited; // one half-second look is the normal case
        }

        private void writeCsv(Iterable<Result> results) throws IOException {
            StringBuilder csv = new StringBuilder(
                    "case,role,round,ids_per_second,jvm_cpu_us_per_id,pg_cpu_us_per_id,other_load_cores,disturbed\n");
            for (Result r : results) {
                for (int i = 0; i < r.rounds.size(); i++) {
                    Round x = r.rounds.get(i);
                    csv.append(String.format(
                            Locale.ROOT,
                            "%s,%s,%d,%.1f,%.2f,%.2f,%.2f,%s%n",
                            r.benchmarkCase.id,
                            r.benchmarkCase.role,
                            i + 1,
                            x.rate(),
                            x.jvmMicrosPerId(),
                            x.postgresMicrosPerId(),
                            x.otherCores(),
                            x.disturbed()));
                }
            }
            Path parent = options.csv.toAbsolutePath().getParent();
            if (parent != null) {
                Files.createDirectories(parent);
            }
            Files.writeString(options.csv, csv, StandardCharsets.UTF_8);
            out.println("Wrote " + options.csv);
        }
    }

    // ------------------------------------------------------------------ report

    static final class Report {

        private final List<Result> results;
        private final double maxOtherLoad;
        private final boolean checkTargets;

        Report(List<Result> results, double maxOtherLoad, boolean checkTargets) {
            this.results = results;
            this.maxOtherLoad = maxOtherLoad;
            this.checkTargets = checkTargets;
        }

        private Result byRole(Role role) {
            return results.stream()
                    .filter(r -> r.benchmarkCase.role == role)
                    .findFirst()
                    .orElse(null);
        }

        private Result byId(String id) {
            return results.stream()
                    .filter(r -> r.benchmarkCase.id.equals(id))
                    .findFirst()
                    .orElse(null);
        }

        private static String ratio(Result r, Result base) {
            return base == null ? "-" : String.format(Locale.ROOT, "%.2f", r.median() / base.median());
        }

        void print(PrintStream out) {
            Result raw = byRole(Role.RAW);
            Result camel = byRole(Role.CAMEL);
            Result si = byRole(Role.SPRING_INTEGRATION);
            int labelWidth = results.stream()
                    .mapToInt(r -> r.benchmarkCase.label.length())
                    .max()
                    .orElse(10);
            String header = String.format(
                    Locale.ROOT,
                    "%-20s %-" + labelWidth + "s %10s %19s %7s %7s %7s %7s %7s %7s %7s",
                    "case",
                    "what",
                    "ids/s",
                    "rounds min-max",
                    "/raw",
                    "/Camel",
                    "/SI",
                    "cli us",
                    "pg us",
                    "others",
                    "rounds");
            out.println(header);
            out.println("-".repeat(header.length()));
            for (Result r : results) {
                out.printf(
                        Locale.ROOT,
                        "%-20s %-" + labelWidth + "s %,10.0f %,9.0f-%,-9.0f %7s %7s %7s %7.1f %7.1f %7.2f %4d/%-2d%n",
                        r.benchmarkCase.id,
                        r.benchmarkCase.label,
                        r.median(),
                        r.min(),
                        r.max(),
                        ratio(r, raw),
                        ratio(r, camel),
                        ratio(r, si),
                        r.jvmMicrosPerId(),
                        r.postgresMicrosPerId(),
                        r.meanOtherCores(),
                        r.used().size(),
                        r.rounds.size());
            }
            out.println();
            out.println(
                    "ids/s: median of the rounds used (min-max of those). cli us / pg us: CPU per id of the client thread /"
                            + " of the PostgreSQL processes serving it.");
            out.println("others: mean CPU, in cores of " + Runtime.getRuntime().availableProcessors()
                    + ", that other processes used"
                    + " while the case was measured. rounds: used/run; a round during which others used more than "
                    + maxOtherLoad + " cores is DISTURBED and left out, unless all were.");
            List<String> details = results.stream()
                    .flatMap(r -> r.details.stream().skip(Math.max(0, r.details.size() - 1)))
                    .toList();
            if (!details.isEmpty()) {
                out.println();
                details.forEach(d -> out.println("  " + d));
            }
            if (checkTargets) {
                out.println();
                printTargets(out, raw, camel, si);
            }
        }

        private void printTargets(PrintStream out, Result raw, Result camel, Result si) {
            List<String> lines = new ArrayList<>();
            if (raw != null) {
                for (String id : List.of("sumi-tx", "sumi-tx-exec")) {
                    Result r = byId(id);
                    if (r != null) {
                        double goal = 0.85 * raw.median();
                        lines.add(check(
                                r.median() >= goal,
                                String.format(
                                        Locale.ROOT,
                                        "transactional claim >= 0.85 x raw insert: %-14s %,8.0f vs %,8.0f (%.2f x raw)",
                                        id,
                                        r.median(),
                                        goal,
                                        r.median() / raw.median())));
                    }
                }
            }
            if (camel != null) {
                for (Result r : results) {
                    if (r.benchmarkCase.role == Role.SUMI && r.benchmarkCase.id.startsWith("sumi-batch")) {
                        double goal = 10 * camel.median();
                        lines.add(check(
                                r.median() >= goal,
                                String.format(
                                        Locale.ROOT,
                                        "batch claim >= 10 x Camel:                %-14s %,8.0f vs %,8.0f (%.1f x Camel)",
                                        r.benchmarkCase.id,
                                        r.median(),
                                        goal,
                                        r.median() / camel.median())));
                    }
                }
            }
            if (camel != null || si != null) {
                double best = Math.max(camel == null ? 0 : camel.median(), si == null ? 0 : si.median());
                for (Result r : results) {
                    if (r.benchmarkCase.role == Role.SUMI) {
                        lines.add(check(
                                r.median() > best,
                                String.format(
                                        Locale.ROOT,
                                        "ahead of both peers:                      %-14s %,8.0f vs %,8.0f (%.2f x the faster peer)",
                                        r.benchmarkCase.id,
                                        r.median(),
                                        best,
                                        r.median() / best)));
                    }
                }
            }
            if (!lines.isEmpty()) {
                out.println("Targets:");
                lines.forEach(l -> out.println("  " + l));
            }
        }

        private static String check(boolean ok, String text) {
            return (ok ? "PASS  " : "MISS  ") + text;
        }
    }
}
