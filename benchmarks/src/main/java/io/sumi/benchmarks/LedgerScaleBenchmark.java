package io.sumi.benchmarks;

import static io.sumi.benchmarks.LedgerCases.CONSUMER;
import static io.sumi.benchmarks.LedgerCases.LEASE;
import static io.sumi.benchmarks.LedgerCases.expect;

import com.zaxxer.hikari.HikariDataSource;
import io.sumi.jdbc.DatabaseType;
import io.sumi.store.ClaimOutcome;
import io.sumi.store.ClaimRequest;
import io.sumi.store.ClaimResult;
import io.sumi.store.LedgerPruner;
import io.sumi.store.jdbc.JdbcProcessedMessageStore;
import java.io.PrintStream;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The ledger at scale, on PostgreSQL or MariaDB (issue 12, part 4, and issue 23, part 3; see
 * docs/benchmarks.md, "A ledger of 10 million rows"):
 *
 * <ol>
 *   <li><b>Claims on a big ledger vs an empty one</b>: a ledger of {@code --rows} rows (default 10
 *       million, one consumer, random UUID keys, bulk-loaded with {@code generate_series}, then
 *       indexed, vacuumed and analyzed), next to an empty ledger, in the same run and alternating:
 *       single-id lease claims ({@code claim}, then {@code complete}) and batch claims of
 *       {@code --batch} ids ({@code claimAll}, then {@code completeAll}), one client thread.
 *       Reported: latency of the claim call (p50, p99) and ids/s of the whole cycle, with the ratios
 *       big / empty (target: latency ≤ 1.2 ×).
 *   <li><b>Pruning under load</b> ({@code --pruning=true}): the loaded rows were processed 28 to
 *       14 days ago, i.e. all past the default retention of 14 days. One thread claims at full
 *       speed (single-id lease cycles) while the pruning job ({@link LedgerPruner}, default batch
 *       of 1,000 rows) deletes them, for {@code --prune-seconds}; before and after, the same claims
 *       with no pruning. Reported: claim p50/p99 during pruning vs idle (target p99 ≤ 2 ×), and the
 *       rows the job deleted per second vs the rows the claims inserted.
 * </ol>
 *
 * <pre>
 * ./mvnw -B -q -pl benchmarks -am package -DskipTests
 * java -jar benchmarks/target/sumi-benchmarks.jar scale [--rows=10000000] [--rounds=3] [--warmup=2] [--duration=10]
 *     [--batch=100] [--keys=random|sequential] [--session-sql="SET wal_compression = lz4"] [--pruning=true] [--idle-seconds=20] [--prune-seconds=60] [--reuse] [--keep]
 *     [--url=jdbc:postgresql://127.0.0.1:5432/sumi_bench] [--user=postgres] [--password=]
 * </pre>
 *
 * On MariaDB ({@code --url=jdbc:mariadb://127.0.0.1:3306/sumi_bench --user=root}), the two ledgers
 * are databases of their own instead of schemas ({@code bench_scale_empty}, {@code bench_scale_big}),
 * Sumi's MariaDB migration creates them, the rows come from the SEQUENCE engine sorted by key (the
 * primary key is InnoDB's clustered index, so a sorted load is an append), the pruning statements
 * are MariaDB's, and the CPU of other processes is not sampled.
 *
 * <p>The big ledger lives in the schema {@code bench_scale_big} and is dropped at the end unless
 * {@code --keep}; {@code --reuse} measures a ledger a previous {@code --keep} run left instead of
 * loading one (it needs about 2.5 GB of disk per 10 million rows).
 */
public final class LedgerScaleBenchmark {

    private static final PrintStream out = System.out;

    private static final String EMPTY = "bench_scale_empty";
    private static final String BIG = "bench_scale_big";

    private static final String MARIADB_MIGRATION = "db/sumi/mariadb/R__sumi_processed_messages.sql";

    private final Options options;
    private final BenchDatabase db;
    private final CpuMonitor cpu;
    /** The URL names a MariaDB (or MySQL) server: databases for schemas, its SQL for PostgreSQL's. */
    private final boolean mariadb;

    private LedgerScaleBenchmark(Options options) {
        this.options = options;
        this.db = new BenchDatabase(options.url, options.user, options.password);
        this.cpu = new CpuMonitor(db.databaseName());
        this.mariadb = BenchSql.isMariaDb(options.url);
    }

    public static void main(String[] args) throws Exception {
        new LedgerScaleBenchmark(Options.parse(args)).run();
    }

    static final class Options {
        String url = env("SUMI_BENCH_URL", "jdbc:postgresql://127.0.0.1:5432/sumi_bench");
        String user = env("SUMI_BENCH_USER", "postgres");
        String password = env("SUMI_BENCH_PASSWORD", "");
        long rows = 10_000_000;
        int rounds = 3;
        double warmupSeconds = 2;
        double durationSeconds = 10;
        int batch = 100;
        boolean pruning = true;
        double idleSeconds = 20;
        double pruneSeconds = 60;
        boolean sequentialKeys;
        String sessionSql;
        boolean reuse;
        boolean keep;

        static Options parse(String[] args) {
            Options o = new Options();
            for (String arg : args) {
                if (arg.equals("--reuse")) {
                    o.reuse = true;
                    continue;
                }
                if (arg.equals("--keep")) {
                    o.keep = true;
                    continue;
                }
                int eq = arg.indexOf('=');
                if (!arg.startsWith("--") || eq < 0) {
                    throw new IllegalArgumentException("Expected --name=value, got " + arg);
                }
                String value = arg.substring(eq + 1);
                switch (arg.substring(2, eq)) {
                    case "url" -> o.url = value;
                    case "user" -> o.user = value;
                    case "password" -> o.password = value;
                    case "rows" -> o.rows = Long.parseLong(value);
                    case "rounds" -> o.rounds = Integer.parseInt(value);
                    case "warmup" -> o.warmupSeconds = Double.parseDouble(value);
                    case "duration" -> o.durationSeconds = Double.parseDouble(value);
                    case "batch" -> o.batch = Integer.parseInt(value);
                    case "pruning" -> o.pruning = Boolean.parseBoolean(value);
                    case "idle-seconds" -> o.idleSeconds = Double.parseDouble(value);
                    case "prune-seconds" -> o.pruneSeconds = Double.parseDouble(value);
                    case "session-sql" -> o.sessionSql = value;
                    case "keys" -> {
                        if (!value.equals("random") && !value.equals("sequential")) {
                            throw new IllegalArgumentException("--keys is random or sequential, was " + value);
                        }
                        o.sequentialKeys = value.equals("sequential");
                    }
                    default -> throw new IllegalArgumentException("Unknown option " + arg);
                }
            }
            return o;
        }

        private static String env(String name, String fallback) {
            String value = System.getenv(name);
            return value == null || value.isEmpty() ? fallback : value;
        }
    }

    // ------------------------------------------------------------------ latencies

    /** Latencies of one phase, in nanoseconds, and the ids the phase took. */
    static final class Latencies {
        private long[] nanos = new long[1 << 16];
        private int count;
        long ids;
        double seconds;
        double otherCores = Double.NaN;

        void add(long value) {
            if (count == nanos.length) {
                nanos = Arrays.copyOf(nanos, count * 2);
            }
            nanos[count++] = value;
        }

        double percentileMillis(double p) {
            if (count == 0) {
                return Double.NaN;
            }
            long[] sorted = Arrays.copyOf(nanos, count);
            Arrays.sort(sorted);
            int index = (int) Math.min(count - 1, Math.max(0, Math.ceil(p / 100.0 * count) - 1));
            return sorted[index] / 1e6;
        }

        double idsPerSecond() {
            return ids / seconds;
        }

        int calls() {
            return count;
        }
    }

    // ------------------------------------------------------------------ keys

    /**
     * The message ids: random UUIDs (the default: each key lands at a random place in the primary
     * key, as keys from most producers do), or {@code --keys=sequential}: zero-padded increasing
     * numbers, as Sumi's own outbox ids (an identity column) arrive, each key at the right edge of
     * the index. The loaded rows have keys of the same kind.
     */
    private final AtomicLong sequence = new AtomicLong();

    private Keys keys() {
        if (options.sequentialKeys) {
            return () -> String.format("%019d", sequence.incrementAndGet());
        }
        Ids ids = new Ids(System.nanoTime());
        return ids::next;
    }

    private interface Keys {
        String next();

        default List<String> next(int count) {
            List<String> keys = new ArrayList<>(count);
            for (int i = 0; i < count; i++) {
                keys.add(next());
            }
            return keys;
        }
    }

    private String loadedKeySql() {
        if (mariadb) {
            return options.sequentialKeys
                    ? "LPAD(seq, 19, '0')"
                    : "CONCAT_WS('-', SUBSTR(MD5(seq), 1, 8), SUBSTR(MD5(seq), 9, 4), SUBSTR(MD5(seq), 13, 4),"
                            + " SUBSTR(MD5(seq), 17, 4), SUBSTR(MD5(seq), 21, 12))";
        }
        return options.sequentialKeys ? "lpad(g::text, 19, '0')" : "md5(g::text)::uuid::text";
    }

    // ------------------------------------------------------------------ run

    private void run() throws Exception {
        if (mariadb) {
            BenchSql.ensureMariaDbDatabase(db.url(), options.user, options.password);
        } else {
            db.ensureDatabase();
        }
        out.printf(
                "Sumi ledger at scale: %,d rows vs an empty ledger, %s, 1 client thread%n",
                options.rows, mariadb ? "MariaDB" : "PostgreSQL");
        out.printf("Database: %s%n", db.url());
        java.util.Map<String, String> settings;
        if (mariadb) {
            try (Connection c = db.connect()) {
                settings = BenchSql.mariaDbSettings(c);
            }
        } else {
            settings = db.serverSettings();
        }
        settings.forEach((k, v) -> out.printf("  %s = %s%n", k, v));
        out.printf(
                "JVM: %s %s, %d cores; load average at start: %s%n%n",
                System.getProperty("java.vm.name"),
                System.getProperty("java.version"),
                Runtime.getRuntime().availableProcessors(),
                loadAverage());
        sequence.set(options.rows);
        if (options.sessionSql != null) {
            out.printf("Session SQL on every store connection: %s%n", options.sessionSql);
        }
        out.printf("Keys: %s%n", options.sequentialKeys ? "sequential (zero-padded numbers)" : "random UUIDs");
        try {
            createLedger(EMPTY);
            if (options.reuse) {
                out.printf("Reusing %s.processed_messages: %,d rows%n", BIG, count(BIG));
            } else {
                load();
            }
            printSizes();
            compare();
            if (options.pruning) {
                pruneUnderLoad();
            }
        } finally {
            dropSchema(EMPTY);
            if (!options.keep) {
                dropSchema(BIG);
            }
        }
        out.printf("%nLoad average at the end: %s%n", loadAverage());
    }

    private void createLedger(String schema) throws SQLException {
        if (mariadb) {
            try (Connection c = db.connect();
                    Statement s = c.createStatement()) {
                s.execute("DROP DATABASE IF EXISTS " + schema);
                s.execute("CREATE DATABASE " + schema);
                s.execute("USE " + schema);
                for (String statement : BenchSql.statements(BenchSql.migration(MARIADB_MIGRATION))) {
                    s.execute(statement);
                }
            }
            return;
        }
        try (Connection c = db.connect();
                Statement s = c.createStatement()) {
            s.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
            s.execute("CREATE SCHEMA " + schema);
            s.execute("SET search_path TO " + schema);
            s.execute(BenchDatabase.ledgerMigration());
        }
    }

    /**
     * Loads the big ledger: the table without indexes, rows by generate_series in chunks of a million,
     * then the primary key and Sumi's indexes (the migration again: CREATE INDEX IF NOT EXISTS),
     * then VACUUM (hint bits, visibility map) and ANALYZE, as a ledger that has lived for weeks has.
     */
    private void load() throws SQLException {
        if (mariadb) {
            loadMariadb();
            return;
        }
        createLedger(BIG);
        Instant started = Instant.now();
        try (Connection c = db.connect();
                Statement s = c.createStatement()) {
            s.execute("SET search_path TO " + BIG);
            s.execute("ALTER TABLE processed_messages DROP CONSTRAINT processed_messages_pk");
            for (String index : List.of(
                    "processed_messages_prune_idx",
                    "processed_messages_abandoned_idx",
                    "processed_messages_reconcile_idx")) {
                s.execute("DROP INDEX IF EXISTS " + index);
            }
            long chunk = 1_000_000;
            for (long from = 1; from <= options.rows; from += chunk) {
                long to = Math.min(options.rows, from + chunk - 1);
                // Keys: an MD5 in UUID form (36 characters, random order), like the benchmark's own ids.
                // Processed 28 to 14 days ago, evenly: all of them past the default retention.
                s.execute("INSERT INTO processed_messages (consumer, message_id, status, claim_token, lease_until,"
                        + " attempts, fingerprint, last_error, first_seen_at, processed_at)"
                        + " SELECT '" + CONSUMER + "', " + loadedKeySql() + ", 'COMPLETED', g, NULL, 1, NULL, NULL,"
                        + " t, t FROM generate_series(" + from + ", " + to + ") g,"
                        + " LATERAL (SELECT now() - interval '28 days' + (g::double precision / " + options.rows
                        + ") * interval '14 days' AS t) x");
                out.printf(
                        "  loaded %,d rows (%d s)%n",
                        to, Duration.between(started, Instant.now()).toSeconds());
            }
            s.execute("SET maintenance_work_mem = '256MB'");
            s.execute(
                    "ALTER TABLE processed_messages ADD CONSTRAINT processed_messages_pk PRIMARY KEY (consumer, message_id)");
            s.execute(BenchDatabase.ledgerMigration());
            out.printf(
                    "  indexed (%d s)%n",
                    Duration.between(started, Instant.now()).toSeconds());
            s.execute("VACUUM (ANALYZE) processed_messages");
            s.execute("CHECKPOINT");
        }
        out.printf(
                "Loaded %s.processed_messages: %,d rows in %d s%n",
                BIG, options.rows, Duration.between(started, Instant.now()).toSeconds());
    }

    /**
     * Loads the big ledger on MariaDB: the secondary indexes dropped, every row in one
     * {@code INSERT ... SELECT} from the SEQUENCE engine ordered by key (InnoDB's clustered primary
     * key then grows at its right edge, as a sorted bulk load), the indexes built again (the
     * migration's {@code CREATE INDEX IF NOT EXISTS}), then {@code ANALYZE TABLE}.
     */
    private void loadMariadb() throws SQLException {
        createLedger(BIG);
        Instant started = Instant.now();
        try (Connection c = db.connect();
                Statement s = c.createStatement()) {
            s.execute("USE " + BIG);
            s.execute("DROP INDEX IF EXISTS processed_messages_prune_idx ON processed_messages");
            s.execute("DROP INDEX IF EXISTS processed_messages_abandoned_idx ON processed_messages");
            s.execute("SET unique_checks = 0, foreign_key_checks = 0");
            // Processed 28 to 14 days ago (UTC, as the store binds times), evenly: past the default retention.
            s.execute("INSERT INTO processed_messages (consumer, message_id, status, claim_token, lease_until,"
                    + " attempts, fingerprint, last_error, first_seen_at, processed_at)"
                    + " SELECT '" + CONSUMER + "', k, 'COMPLETED', seq, NULL, 1, NULL, NULL, t, t FROM (SELECT seq, "
                    + loadedKeySql() + " AS k, UTC_TIMESTAMP(6) - INTERVAL 28 DAY + INTERVAL (seq * 1209600 / "
                    + options.rows + ") SECOND AS t FROM seq_1_to_" + options.rows + ") x ORDER BY k");
            out.printf(
                    "  loaded %,d rows (%d s)%n",
                    options.rows, Duration.between(started, Instant.now()).toSeconds());
            s.execute("SET unique_checks = 1, foreign_key_checks = 1");
            // Only the migration's indexes: its ALTER TABLE ... MODIFY could rebuild the whole table.
            for (String statement : BenchSql.statements(BenchSql.migration(MARIADB_MIGRATION))) {
                if (statement.startsWith("CREATE INDEX")) {
                    s.execute(statement);
                }
            }
            out.printf(
                    "  indexed (%d s)%n",
                    Duration.between(started, Instant.now()).toSeconds());
            s.execute("ANALYZE TABLE processed_messages");
        }
        out.printf(
                "Loaded %s.processed_messages: %,d rows in %d s%n",
                BIG, options.rows, Duration.between(started, Instant.now()).toSeconds());
    }

    private void printSizes() throws SQLException {
        if (mariadb) {
            try (Connection c = db.connect();
                    Statement s = c.createStatement();
                    ResultSet rs = s.executeQuery("SELECT data_length, index_length FROM information_schema.tables"
                            + " WHERE table_schema = '" + BIG + "' AND table_name = 'processed_messages'")) {
                rs.next();
                out.printf(
                        "Big ledger: clustered primary key (the rows) %,d MB, secondary indexes %,d MB (the buffer pool"
                                + " is far smaller)%n%n",
                        rs.getLong(1) >> 20, rs.getLong(2) >> 20);
            }
            return;
        }
        try (Connection c = db.connect();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT pg_size_pretty(pg_table_size('" + BIG
                        + ".processed_messages')), pg_size_pretty(pg_relation_size('" + BIG
                        + ".processed_messages_pk')), pg_size_pretty(pg_indexes_size('" + BIG
                        + ".processed_messages'))")) {
            rs.next();
            out.printf(
                    "Big ledger: table %s, primary key %s, all indexes %s (shared_buffers is far smaller: the key"
                            + " index does not fit)%n%n",
                    rs.getString(1), rs.getString(2), rs.getString(3));
        }
    }

    // ------------------------------------------------------------------ 1. big vs empty

    private void compare() throws Exception {
        List<String> kinds = List.of("single", "batch-" + options.batch);
        Latencies[][][] figures = new Latencies[2][kinds.size()][options.rounds]; // [empty|big][kind][round]
        for (int round = 0; round < options.rounds; round++) {
            for (int k = 0; k < kinds.size(); k++) {
                // Alternate which ledger goes first, so drift on the machine falls on both alike.
                int[] order = (round + k) % 2 == 0 ? new int[] {0, 1} : new int[] {1, 0};
                for (int which : order) {
                    String schema = which == 0 ? EMPTY : BIG;
                    if (which == 0) {
                        emptyAndAnalyze(EMPTY);
                    }
                    Latencies l = measure(schema, k == 0 ? 1 : options.batch, options.durationSeconds);
                    figures[which][k][round] = l;
                    out.printf(
                            Locale.ROOT,
                            "round %d  %-6s %-9s claim p50 %6.2f ms  p99 %6.2f ms  %,9.0f ids/s  (%,d calls, other load %.2f cores)%n",
                            round + 1,
                            which == 0 ? "empty" : "big",
                            kinds.get(k),
                            l.percentileMillis(50),
                            l.percentileMillis(99),
                            l.idsPerSecond(),
                            l.calls(),
                            l.otherCores);
                }
            }
        }
        out.printf("%nBig (%,d rows) vs empty ledger, median of %d rounds:%n", count(BIG), options.rounds);
        out.printf(
                "%-10s %12s %12s %8s %12s %12s %8s %12s %12s %8s%n",
                "case",
                "empty p50",
                "big p50",
                "ratio",
                "empty p99",
                "big p99",
                "ratio",
                "empty ids/s",
                "big ids/s",
                "ratio");
        List<String> verdicts = new ArrayList<>();
        for (int k = 0; k < kinds.size(); k++) {
            double e50 = median(figures[0][k], l -> l.percentileMillis(50));
            double b50 = median(figures[1][k], l -> l.percentileMillis(50));
            double e99 = median(figures[0][k], l -> l.percentileMillis(99));
            double b99 = median(figures[1][k], l -> l.percentileMillis(99));
            double eRate = median(figures[0][k], Latencies::idsPerSecond);
            double bRate = median(figures[1][k], Latencies::idsPerSecond);
            out.printf(
                    Locale.ROOT,
                    "%-10s %9.2f ms %9.2f ms %7.2fx %9.2f ms %9.2f ms %7.2fx %12.0f %12.0f %7.2fx%n",
                    kinds.get(k),
                    e50,
                    b50,
                    b50 / e50,
                    e99,
                    b99,
                    b99 / e99,
                    eRate,
                    bRate,
                    bRate / eRate);
            verdicts.add(String.format(
                    Locale.ROOT,
                    "%s  claim latency with %,d rows <= 1.2 x empty, %s: p50 %.2f x, p99 %.2f x",
                    b50 / e50 <= 1.2 && b99 / e99 <= 1.2 ? "PASS" : "MISS",
                    options.rows,
                    kinds.get(k),
                    b50 / e50,
                    b99 / e99));
        }
        out.println("Targets:");
        verdicts.forEach(v -> out.println("  " + v));
        out.println();
    }

    private interface Figure {
        double of(Latencies l);
    }

    private static double median(Latencies[] rounds, Figure figure) {
        double[] values = Arrays.stream(rounds).mapToDouble(figure::of).sorted().toArray();
        int mid = values.length / 2;
        return values.length % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
    }

    /** Warm-up, then {@code seconds} of claim + complete cycles of {@code size} new ids on the ledger of {@code schema}. */
    private Latencies measure(String schema, int size, double seconds) throws Exception {
        try (HikariDataSource pool = pool("scale-" + schema)) {
            JdbcProcessedMessageStore store = store(pool, schema);
            Keys ids = keys();
            cycles(store, ids, size, options.warmupSeconds, new Latencies());
            Latencies latencies = new Latencies();
            CpuMonitor.Sample before = cpu.sample();
            cycles(store, ids, size, seconds, latencies);
            latencies.otherCores = mariadb ? Double.NaN : CpuMonitor.otherCores(before, cpu.sample());
            return latencies;
        }
    }

    private JdbcProcessedMessageStore store(javax.sql.DataSource dataSource, String schema) {
        return JdbcProcessedMessageStore.builder(dataSource)
                .tableName(schema + ".processed_messages")
                .databaseType(mariadb ? DatabaseType.MARIADB : DatabaseType.POSTGRESQL)
                .build();
    }

    private static void cycles(JdbcProcessedMessageStore store, Keys ids, int size, double seconds, Latencies into) {
        cycles(store, ids, size, seconds, into, new AtomicBoolean());
    }

    /** Claim (timed) + complete cycles until {@code seconds} have passed or {@code stop} is set. */
    private static void cycles(
            JdbcProcessedMessageStore store, Keys ids, int size, double seconds, Latencies into, AtomicBoolean stop) {
        long start = System.nanoTime();
        long end = start + (long) (seconds * 1e9);
        long now = start;
        while (now < end && !stop.get()) {
            if (size == 1) {
                ClaimRequest request = new ClaimRequest(ids.next(), null);
                long t0 = System.nanoTime();
                ClaimResult result = store.claim(CONSUMER, request, LEASE);
                into.add(System.nanoTime() - t0);
                expect(result.outcome() == ClaimOutcome.CLAIMED, () -> "claim of a new id: " + result);
                expect(store.complete(result.message()), "complete of a fresh claim");
            } else {
                List<String> batch = ids.next(size);
                List<ClaimRequest> requests = new ArrayList<>(size);
                for (String id : batch) {
                    requests.add(new ClaimRequest(id, null));
                }
                long t0 = System.nanoTime();
                List<ClaimResult> results = store.claimAll(CONSUMER, requests, LEASE);
                into.add(System.nanoTime() - t0);
                for (ClaimResult result : results) {
                    expect(result.outcome() == ClaimOutcome.CLAIMED, () -> "batch claim of a new id: " + result);
                }
                int completed =
                        store.completeAll(CONSUMER, results.get(0).message().claimToken(), batch);
                expect(completed == size, () -> "completeAll completed " + completed + " of " + size);
            }
            into.ids += size;
            now = System.nanoTime();
        }
        into.seconds = (now - start) / 1e9;
    }

    // ------------------------------------------------------------------ 2. pruning under load

    private void pruneUnderLoad() throws Exception {
        out.printf(
                "Pruning under load: %s.processed_messages, %,d rows, %,d of them past the 14-day retention%n",
                BIG, count(BIG), countExpired());
        try (HikariDataSource claims = pool("scale-claims");
                HikariDataSource pruning = pool("scale-pruner")) {
            JdbcProcessedMessageStore store = store(claims, BIG);
            Keys ids = keys();
            cycles(store, ids, 1, options.warmupSeconds, new Latencies());

            Latencies before = phase(store, ids, options.idleSeconds);
            report("idle (before)", before, null);

            // The job as the starter runs it: LedgerPruner, batches of 1,000 rows, back to back. Runs
            // of 100 batches, one after the other, so the phase ends on time (the default run is up to
            // 1,000 batches; the statements are the same).
            LedgerPruner pruner = LedgerPruner.builder(store(pruning, BIG))
                    .batchSize(LedgerPruner.DEFAULT_BATCH_SIZE)
                    .maxBatches(100)
                    .build();
            AtomicBoolean stop = new AtomicBoolean();
            AtomicLong deleted = new AtomicLong();
            AtomicLong deleteNanos = new AtomicLong();
            Thread job = new Thread(
                    () -> {
                        while (!stop.get()) {
                            long t0 = System.nanoTime();
                            int n = pruner.prune();
                            long took = System.nanoTime() - t0;
                            deleteNanos.addAndGet(took);
                            deleted.addAndGet(n);
                            out.printf(
                                    Locale.ROOT,
                                    "    pruning run: %,d rows in %.2f s (%,.0f rows/s), %,d so far%n",
                                    n,
                                    took / 1e9,
                                    n / (took / 1e9),
                                    deleted.get());
                            if (n == 0) {
                                break;
                            }
                        }
                    },
                    "ledger-pruner");
            job.start();
            Latencies during;
            try {
                during = phase(store, ids, options.pruneSeconds);
            } finally {
                stop.set(true);
                job.join();
            }
            double pruneRate = deleted.get() / (deleteNanos.get() / 1e9);
            report("pruning", during, null);
            Latencies after = phase(store, ids, options.idleSeconds);
            report("idle (after)", after, null);

            double idle99 = Math.max(before.percentileMillis(99), after.percentileMillis(99));
            double idle50 = Math.max(before.percentileMillis(50), after.percentileMillis(50));
            out.printf(
                    Locale.ROOT,
                    "%nThe job deleted %,d rows in %.1f s: %,.0f rows/s, while the claims inserted %,.0f rows/s"
                            + " (%.2f x the insert rate)%n",
                    deleted.get(),
                    deleteNanos.get() / 1e9,
                    pruneRate,
                    during.idsPerSecond(),
                    pruneRate / during.idsPerSecond());
            out.printf(
                    Locale.ROOT,
                    "With the defaults (cron every 15 min, at most 1,000 batches of 1,000 rows per run) the job deletes"
                            + " at most 1,000,000 rows per 15 min = %,.0f rows/s sustained.%n",
                    1_000_000 / 900.0);
            out.println("Targets:");
            double ratio99 = during.percentileMillis(99) / idle99;
            out.printf(
                    Locale.ROOT,
                    "  %s  claim p99 during pruning <= 2 x idle: %.2f ms vs %.2f ms (%.2f x; p50 %.2f x)%n",
                    ratio99 <= 2 ? "PASS" : "MISS",
                    during.percentileMillis(99),
                    idle99,
                    ratio99,
                    during.percentileMillis(50) / idle50);
            out.printf(
                    Locale.ROOT,
                    "  %s  the job keeps up with the insert rate of claims at full speed: %,.0f deleted/s vs %,.0f inserted/s%n",
                    pruneRate >= during.idsPerSecond() ? "PASS" : "MISS",
                    pruneRate,
                    during.idsPerSecond());
        }
    }

    private Latencies phase(JdbcProcessedMessageStore store, Keys ids, double seconds) {
        Latencies l = new Latencies();
        CpuMonitor.Sample before = cpu.sample();
        cycles(store, ids, 1, seconds, l);
        l.otherCores = mariadb ? Double.NaN : CpuMonitor.otherCores(before, cpu.sample());
        return l;
    }

    private static void report(String phase, Latencies l, String extra) {
        out.printf(
                Locale.ROOT,
                "  %-14s single claim p50 %6.2f ms  p99 %6.2f ms  max %7.2f ms  %,7.0f ids/s  (%,d calls, other load %.2f cores)%s%n",
                phase,
                l.percentileMillis(50),
                l.percentileMillis(99),
                l.percentileMillis(100),
                l.idsPerSecond(),
                l.calls(),
                l.otherCores,
                extra == null ? "" : "  " + extra);
    }

    // ------------------------------------------------------------------ helpers

    /** A pool of the store's connections; {@code --session-sql} runs on each new connection. */
    private HikariDataSource pool(String name) {
        return db.pool(name, options.sessionSql);
    }

    private void emptyAndAnalyze(String schema) throws SQLException {
        try (Connection c = db.connect();
                Statement s = c.createStatement()) {
            s.execute("TRUNCATE TABLE " + schema + ".processed_messages");
            s.execute((mariadb ? "ANALYZE TABLE " : "ANALYZE ") + schema + ".processed_messages");
        }
    }

    private long count(String schema) throws SQLException {
        return queryLong("SELECT count(*) FROM " + schema + ".processed_messages");
    }

    private long countExpired() throws SQLException {
        return queryLong(
                "SELECT count(*) FROM " + BIG + ".processed_messages WHERE status = 'COMPLETED' AND processed_at < "
                        + (mariadb ? "UTC_TIMESTAMP(6) - INTERVAL 14 DAY" : "now() - interval '14 days'"));
    }

    private long queryLong(String sql) throws SQLException {
        try (Connection c = db.connect();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private void dropSchema(String schema) {
        try (Connection c = db.connect();
                Statement s = c.createStatement()) {
            s.execute(mariadb ? "DROP DATABASE IF EXISTS " + schema : "DROP SCHEMA IF EXISTS " + schema + " CASCADE");
        } catch (SQLException ex) {
            System.err.println("Could not drop " + schema + ": " + ex);
        }
    }

    private static String loadAverage() {
        try {
            return java.nio.file.Files.readString(java.nio.file.Path.of("/proc/loadavg"))
                    .trim();
        } catch (java.io.IOException ex) {
            return "unknown";
        }
    }
}
