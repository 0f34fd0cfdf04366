package io.sumi.outbox;

import io.sumi.outbox.internal.HeadersJson;
import io.sumi.outbox.internal.Jdbc;
import io.sumi.outbox.internal.OutboxDialect;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import org.jspecify.annotations.Nullable;
import org.springframework.dao.DataAccessException;
import org.springframework.jdbc.datasource.SimpleDriverDataSource;

/**
 * Inserts outbox rows computed by an SQL query of the user's: the retrofit tool for intents the old
 * code path never sent ("orders of the last 7 days whose welcome mail was never sent"). Prints
 * what it would insert and inserts nothing unless asked to ({@code --execute}): a careless
 * backfill sends weeks of mail at once.
 *
 * <p>The query returns one row per message, with these columns (by name, case-insensitive):
 * <ul>
 *   <li>{@code aggregate_id} (required), {@code payload} (required), {@code topic} (required unless
 *   a default topic is given);</li>
 *   <li>optional: {@code headers} (a JSON object), {@code schema_version}, {@code tenant_id} (or
 *   {@code tenant}), {@code trace_id}, {@code available_at} (a timestamp).</li>
 * </ul>
 * By default a row is skipped when the outbox already holds a row (dispatched or not) of the same
 * topic and aggregate, or an earlier row of this run does: running a backfill twice then inserts
 * nothing new. With an interval, row {@code n} becomes due {@code n × interval} after the start,
 * so the dispatcher sends them at that pace instead of all at once. Rows are inserted in batches,
 * each in its own transaction; the query itself runs in a read-only transaction of its own.
 *
 * <p>Command line ({@link #main}): {@code java -cp <sumi-outbox-producer and its dependencies,
 * the JDBC driver> io.sumi.outbox.OutboxBackfill --url jdbc:postgresql://db/app --user app
 * --query "SELECT ..." [--topic mail.send] [--interval 200ms] [--execute]}; {@code --help} lists
 * every option.
 */
public final class OutboxBackfill {

    /** Default rows per insert batch (one transaction each). */
    public static final int DEFAULT_BATCH_SIZE = 500;

    /** Default rows printed before the summary. */
    public static final int DEFAULT_PRINT_LIMIT = 20;

    private static final int PAYLOAD_PREVIEW = 160;

    private final OutboxTable table;
    private final String query;
    private final @Nullable String defaultTopic;
    private final boolean skipExisting;
    private final Duration interval;
    private final int batchSize;
    private final int printLimit;

    private OutboxBackfill(Builder builder) {
        this.table = builder.table;
        this.query = builder.query;
        this.defaultTopic = builder.defaultTopic;
        this.skipExisting = builder.skipExisting;
        this.interval = builder.interval;
        this.batchSize = builder.batchSize;
        this.printLimit = builder.printLimit;
    }

    /** Starts a backfill into {@code table} of the rows {@code query} returns (run on the table's DataSource). */
    public static Builder builder(OutboxTable table, String query) {
        return new Builder(table, query);
    }

    /**
     * What a run did, or would do.
     *
     * @param read rows the query returned
     * @param inserted rows inserted (or, in a dry run, that would be)
     * @param skipped rows skipped because their topic and aggregate are already in the outbox
     * @param executed whether rows were written ({@code false}: dry run)
     */
    public record Report(int read, int inserted, int skipped, boolean executed) {
    }

    /**
     * Runs the backfill: a dry run unless {@code execute}, printing the plan to {@code out}.
     *
     * @throws IllegalArgumentException if the query lacks a required column or a row is invalid
     *     (nothing of a dry run, and only whole earlier batches of a real run, are written then)
     * @throws DataAccessException if the query or an insert fails
     */
    public Report run(boolean execute, PrintStream out) {
        Instant start = table.clock().instant();
        out.println((execute ? "Backfilling" : "Dry run (nothing is written; pass --execute to insert):") + " outbox table "
                + table.tableName() + " from:");
        out.println("  " + query.strip().replaceAll("\\s+", " "));
        Counts counts = new Counts();
        Set<String> seen = new HashSet<>();
        try (Connection connection = table.dataSource().getConnection()) {
            connection.setReadOnly(true);
            connection.setAutoCommit(false);
            try (PreparedStatement statement = connection.prepareStatement(query)) {
                statement.setFetchSize(batchSize);
                try (ResultSet rs = statement.executeQuery()) {
                    Columns columns = Columns.of(rs.getMetaData(), defaultTopic);
                    List<OutboxMessage> batch = new ArrayList<>(batchSize);
                    while (rs.next()) {
                        batch.add(columns.read(rs, table.dialect(), start, interval, counts.read++));
                        if (batch.size() == batchSize) {
                            process(batch, execute, counts, seen, out);
                            batch.clear();
                        }
                    }
                    process(batch, execute, counts, seen, out);
                }
            }
            finally {
                connection.rollback();
            }
        }
        catch (SQLException ex) {
            throw Jdbc.translate("backfill", ex);
        }
        if (execute && counts.inserted > 0) {
            Jdbc.inOwnTransaction(table.dataSource(), "analyze", connection -> {
                table.dialect().analyze(connection);
                return null;
            });
        }
        if (counts.printed < counts.inserted + counts.skipped) {
            out.println("  ... and " + (counts.inserted + counts.skipped - counts.printed) + " more");
        }
        out.println((execute ? "Inserted " : "Would insert ") + counts.inserted + " of " + counts.read + " rows"
                + (skipExisting ? "; skipped " + counts.skipped + " whose topic and aggregate are already in the outbox" : "")
                + (execute || counts.inserted == 0 ? "." : ". Run again with --execute to insert them."));
        return new Report(counts.read, counts.inserted, counts.skipped, execute);
    }

    private void process(List<OutboxMessage> batch, boolean execute, Counts counts, Set<String> seen, PrintStream out) {
        if (batch.isEmpty()) {
            return;
        }
        List<OutboxMessage> toInsert = new ArrayList<>(batch.size());
        Map<String, Set<String>> existing = skipExisting ? existing(batch) : Map.of();
        Instant now = table.clock().instant();
        for (OutboxMessage message : batch) {
            String key = message.topic() + '\u0000' + message.aggregateId();
            boolean skip = skipExisting && (existing.getOrDefault(message.topic(), Set.of()).contains(message.aggregateId())
                    || !seen.add(key));
            if (counts.printed < printLimit) {
                counts.printed++;
                out.println("  " + (skip ? "skip (already in the outbox): " : execute ? "insert: " : "would insert: ")
                        + describe(message, now));
            }
            if (skip) {
                counts.skipped++;
            }
            else {
                toInsert.add(message);
            }
        }
        if (execute && !toInsert.isEmpty()) {
            List<OutboxDialect.NewRow> rows = new ArrayList<>(toInsert.size());
            for (OutboxMessage message : toInsert) {
                rows.add(new OutboxDialect.NewRow(message.aggregateId(), message.topic(), message.payload(),
                        HeadersJson.write(message.headers()), now, message.availableAt(now)));
            }
            Jdbc.inOwnTransaction(table.dataSource(), "backfill insert", connection -> table.dialect().insertAll(connection, rows));
        }
        counts.inserted += toInsert.size();
    }

    private Map<String, Set<String>> existing(List<OutboxMessage> batch) {
        Map<String, Set<String>> byTopic = new LinkedHashMap<>();
        for (OutboxMessage message : batch) {
            byTopic.computeIfAbsent(message.topic(), topic -> new LinkedHashSet<>()).add(message.aggregateId());
        }
        Map<String, Set<String>> existing = new LinkedHashMap<>();
        for (Map.Entry<String, Set<String>> topic : byTopic.entrySet()) {
            existing.put(topic.getKey(), Jdbc.inOwnTransaction(table.dataSource(), "backfill check",
                    connection -> table.dialect().existingAggregates(connection, topic.getKey(), topic.getValue())));
        }
        return existing;
    }

    private static String describe(OutboxMessage message, Instant now) {
        String payload = message.payload().replaceAll("\\s+", " ");
        if (payload.length() > PAYLOAD_PREVIEW) {
            payload = payload.substring(0, PAYLOAD_PREVIEW) + "...";
        }
        return "topic=" + message.topic() + " aggregate=" + message.aggregateId() + " available_at=" + message.availableAt(now)
                + (message.headers().isEmpty() ? "" : " headers=" + HeadersJson.write(message.headers())) + " payload=" + payload;
    }

    private static final class Counts {
        int read;
        int inserted;
        int skipped;
        int printed;
    }

    /** Where the message's parts are in the query's result. */
    private record Columns(int aggregateId, int topic, int payload, int headers, int schemaVersion, int tenant, int traceId,
            int availableAt, @Nullable String defaultTopic) {

        static Columns of(ResultSetMetaData metaData, @Nullable String defaultTopic) throws SQLException {
            Map<String, Integer> byName = new LinkedHashMap<>();
            for (int i = 1; i <= metaData.getColumnCount(); i++) {
                byName.putIfAbsent(metaData.getColumnLabel(i).toLowerCase(Locale.ROOT), i);
            }
            int aggregateId = byName.getOrDefault("aggregate_id", 0);
            int topic = byName.getOrDefault("topic", 0);
            int payload = byName.getOrDefault("payload", 0);
            if (aggregateId == 0 || payload == 0 || (topic == 0 && defaultTopic == null)) {
                throw new IllegalArgumentException("The backfill query must return the columns aggregate_id, payload and topic"
                        + " (or give a default topic with --topic); optional: headers, schema_version, tenant_id, trace_id,"
                        + " available_at. It returned: " + String.join(", ", byName.keySet()));
            }
            return new Columns(aggregateId, topic, payload, byName.getOrDefault("headers", 0),
                    byName.getOrDefault("schema_version", 0), byName.getOrDefault("tenant_id", byName.getOrDefault("tenant", 0)),
                    byName.getOrDefault("trace_id", 0), byName.getOrDefault("available_at", 0), defaultTopic);
        }

        OutboxMessage read(ResultSet rs, OutboxDialect dialect, Instant start, Duration interval, int index) throws SQLException {
            String topicValue = topic > 0 ? rs.getString(topic) : null;
            if (topicValue == null) {
                topicValue = defaultTopic;
            }
            String payloadValue = rs.getString(payload);
            String aggregate = rs.getString(aggregateId);
            if (aggregate == null || payloadValue == null || topicValue == null) {
                throw new IllegalArgumentException("Row " + (index + 1) + " of the backfill query has no "
                        + (aggregate == null ? "aggregate_id" : payloadValue == null ? "payload" : "topic"));
            }
            OutboxMessage.Builder message = OutboxMessage.builder(aggregate, topicValue, payloadValue);
            if (headers > 0 && rs.getString(headers) != null) {
                message.headers(HeadersJson.read(rs.getString(headers)));
            }
            text(rs, schemaVersion, message::schemaVersion);
            text(rs, tenant, message::tenant);
            text(rs, traceId, message::traceId);
            Instant due = availableAt > 0 ? instant(rs, availableAt) : null;
            if (due == null && !interval.isZero()) {
                due = start.plus(interval.multipliedBy(index));
            }
            if (due != null) {
                message.availableAt(due);
            }
            return message.build();
        }

        private static void text(ResultSet rs, int column, java.util.function.Consumer<String> setter) throws SQLException {
            if (column > 0) {
                String value = rs.getString(column);
                if (value != null && !value.isBlank()) {
                    setter.accept(value);
                }
            }
        }

        private static @Nullable Instant instant(ResultSet rs, int column) throws SQLException {
            try {
                OffsetDateTime value = rs.getObject(column, OffsetDateTime.class);
                return value == null ? null : value.toInstant();
            }
            catch (SQLException | RuntimeException ex) {
                Timestamp value = rs.getTimestamp(column);
                return value == null ? null : value.toInstant();
            }
        }
    }

    // ---------------------------------------------------------------- command line

    /**
     * The command line; see {@link #usage()}. Exits with 0 on success, 1 on a failure, 2 on a usage
     * error.
     */
    public static void main(String[] args) {
        System.exit(run(args, System.out, System.err));
    }

    /** Runs the command line, printing to {@code out} and {@code err}; returns the exit code. */
    public static int run(String[] args, PrintStream out, PrintStream err) {
        Map<String, String> options = new LinkedHashMap<>();
        Set<String> flags = new HashSet<>();
        try {
            for (int i = 0; i < args.length; i++) {
                String arg = args[i];
                switch (arg) {
                    case "--help", "-h" -> {
                        out.println(usage());
                        return 0;
                    }
                    case "--execute", "--dry-run", "--no-skip-existing" -> flags.add(arg);
                    case "--url", "--user", "--password", "--query", "--query-file", "--topic", "--table", "--interval",
                            "--batch-size", "--print" -> {
                        if (i + 1 >= args.length) {
                            throw new IllegalArgumentException(arg + " needs a value");
                        }
                        options.put(arg, args[++i]);
                    }
                    default -> throw new IllegalArgumentException("Unknown option " + arg);
                }
            }
            if (flags.contains("--execute") && flags.contains("--dry-run")) {
                throw new IllegalArgumentException("Give either --execute or --dry-run");
            }
            String url = require(options, "--url");
            String query = options.containsKey("--query-file")
                    ? Files.readString(Path.of(options.get("--query-file")), StandardCharsets.UTF_8)
                    : require(options, "--query");
            // Every option is checked before the database is touched.
            Duration interval = options.containsKey("--interval") ? parseDuration(options.get("--interval")) : Duration.ZERO;
            int batchSize = options.containsKey("--batch-size") ? number(options, "--batch-size") : DEFAULT_BATCH_SIZE;
            int printLimit = options.containsKey("--print") ? number(options, "--print") : DEFAULT_PRINT_LIMIT;
            String tableName = OutboxTable.validateTableName(options.getOrDefault("--table", OutboxTable.DEFAULT_TABLE_NAME));
            SimpleDriverDataSource dataSource = new SimpleDriverDataSource();
            dataSource.setDriverClass(driver(url));
            dataSource.setUrl(url);
            dataSource.setUsername(options.getOrDefault("--user", ""));
            dataSource.setPassword(options.getOrDefault("--password", ""));
            OutboxTable table = OutboxTable.builder(dataSource).tableName(tableName).build();
            Builder builder = builder(table, query).skipExisting(!flags.contains("--no-skip-existing"))
                    .interval(interval).batchSize(batchSize).printLimit(printLimit);
            if (options.containsKey("--topic")) {
                builder.defaultTopic(options.get("--topic"));
            }
            builder.build().run(flags.contains("--execute"), out);
            return 0;
        }
        catch (IllegalArgumentException | IOException ex) {
            err.println("outbox backfill: " + ex.getMessage());
            err.println("Run with --help for the options.");
            return 2;
        }
        catch (RuntimeException ex) {
            err.println("outbox backfill failed: " + ex.getMessage());
            return 1;
        }
    }

    private static int number(Map<String, String> options, String name) {
        try {
            return Integer.parseInt(options.get(name));
        }
        catch (NumberFormatException ex) {
            throw new IllegalArgumentException(name + " needs a number, was '" + options.get(name) + "'");
        }
    }

    private static String require(Map<String, String> options, String name) {
        String value = options.get(name);
        if (value == null || value.isBlank()) {
            throw new IllegalArgumentException(name + " is required");
        }
        return value;
    }

    @SuppressWarnings("unchecked")
    private static Class<? extends java.sql.Driver> driver(String url) {
        try {
            return (Class<? extends java.sql.Driver>) java.sql.DriverManager.getDriver(url).getClass();
        }
        catch (SQLException ex) {
            throw new IllegalArgumentException("No JDBC driver on the class path accepts " + url + " (add the driver jar)");
        }
    }

    /** Parses {@code 200ms}, {@code 5s}, {@code 2m}, {@code 1h}, {@code 1d} or ISO-8601 ({@code PT5S}). */
    static Duration parseDuration(String text) {
        String value = text.trim().toLowerCase(Locale.ROOT);
        try {
            if (value.startsWith("p")) {
                return Duration.parse(text.trim());
            }
            if (value.endsWith("ms")) {
                return Duration.ofMillis(Long.parseLong(value.substring(0, value.length() - 2)));
            }
            long amount = Long.parseLong(value.substring(0, value.length() - 1));
            return switch (value.charAt(value.length() - 1)) {
                case 's' -> Duration.ofSeconds(amount);
                case 'm' -> Duration.ofMinutes(amount);
                case 'h' -> Duration.ofHours(amount);
                case 'd' -> Duration.ofDays(amount);
                default -> throw new IllegalArgumentException("unknown unit");
            };
        }
        catch (RuntimeException ex) {
            throw new IllegalArgumentException("Invalid duration '" + text + "': use 200ms, 5s, 2m, 1h, 1d or PT5S");
        }
    }

    /** The command line's help text. */
    public static String usage() {
        return """
                Usage: java -cp <classpath> io.sumi.outbox.OutboxBackfill --url <jdbc-url> --query <sql> [options]

                Inserts outbox rows computed by a query. Prints what it would insert and writes nothing
                unless --execute is given (--dry-run is the default).

                The query returns one row per message with the columns aggregate_id, payload and topic
                (topic may instead be given with --topic), and optionally headers (a JSON object),
                schema_version, tenant_id, trace_id and available_at.

                Options:
                  --url <jdbc-url>        the database of the outbox table (the JDBC driver must be on the class path)
                  --user <name>           database user
                  --password <secret>     database password
                  --query <sql>           the query (or --query-file <path>)
                  --topic <topic>         the topic of rows whose query has no topic column
                  --table <name>          the outbox table (default: outbox)
                  --interval <duration>   make row n due n x interval after the start (200ms, 5s, 1m, ...);
                                          default: all due at once
                  --no-skip-existing      also insert rows whose topic and aggregate are already in the outbox
                  --batch-size <n>        rows per insert transaction (default 500)
                  --print <n>             rows to print before the summary (default 20)
                  --dry-run               print only (the default)
                  --execute               insert the rows
                """;
    }

    /**
     * Builds an {@link OutboxBackfill}.
     */
    public static final class Builder {

        private final OutboxTable table;
        private final String query;
        private @Nullable String defaultTopic;
        private boolean skipExisting = true;
        private Duration interval = Duration.ZERO;
        private int batchSize = DEFAULT_BATCH_SIZE;
        private int printLimit = DEFAULT_PRINT_LIMIT;

        private Builder(OutboxTable table, String query) {
            this.table = Objects.requireNonNull(table, "table");
            if (query == null || query.isBlank()) {
                throw new IllegalArgumentException("The backfill query must not be blank");
            }
            this.query = query;
        }

        /** The topic of rows whose query result has no {@code topic} column (or a null one). */
        public Builder defaultTopic(String topic) {
            this.defaultTopic = Objects.requireNonNull(topic, "topic");
            return this;
        }

        /** Whether rows whose topic and aggregate are already in the outbox are skipped (default: yes). */
        public Builder skipExisting(boolean skipExisting) {
            this.skipExisting = skipExisting;
            return this;
        }

        /** Row {@code n} becomes due {@code n × interval} after the start; zero (the default): all at once. */
        public Builder interval(Duration interval) {
            if (interval.isNegative()) {
                throw new IllegalArgumentException("The interval must not be negative, was " + interval);
            }
            this.interval = interval;
            return this;
        }

        public Builder batchSize(int batchSize) {
            if (batchSize <= 0) {
                throw new IllegalArgumentException("The batch size must be positive, was " + batchSize);
            }
            this.batchSize = batchSize;
            return this;
        }

        /** Rows printed before the summary (zero: none). */
        public Builder printLimit(int printLimit) {
            if (printLimit < 0) {
                throw new IllegalArgumentException("The print limit must not be negative, was " + printLimit);
            }
            this.printLimit = printLimit;
            return this;
        }

        public OutboxBackfill build() {
            return new OutboxBackfill(this);
        }
    }
}
