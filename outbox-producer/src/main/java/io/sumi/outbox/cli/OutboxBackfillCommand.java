package io.sumi.outbox.cli;

import io.sumi.outbox.OutboxBackfill;
import io.sumi.outbox.OutboxTable;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.SQLException;
import java.time.Duration;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.springframework.jdbc.datasource.SimpleDriverDataSource;

/**
 * The command line of {@link OutboxBackfill}: parses the options, opens the database with the JDBC
 * driver found on the class path, and runs the backfill (a dry run unless {@code --execute}).
 *
 * <p>{@code java -cp <sumi-outbox-producer and its dependencies, the JDBC driver>
 * io.sumi.outbox.cli.OutboxBackfillCommand --url jdbc:postgresql://db/app --user app
 * --query "SELECT ..." [--topic mail.send] [--interval 200ms] [--execute]}; {@code --help} lists
 * every option ({@link #usage()}).
 */
public final class OutboxBackfillCommand {

    private OutboxBackfillCommand() {}

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
                    case "--url",
                            "--user",
                            "--password",
                            "--query",
                            "--query-file",
                            "--topic",
                            "--table",
                            "--interval",
                            "--batch-size",
                            "--print" -> {
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
            Duration interval =
                    options.containsKey("--interval") ? parseDuration(options.get("--interval")) : Duration.ZERO;
            int batchSize = options.containsKey("--batch-size")
                    ? number(options, "--batch-size")
                    : OutboxBackfill.DEFAULT_BATCH_SIZE;
            int printLimit =
                    options.containsKey("--print") ? number(options, "--print") : OutboxBackfill.DEFAULT_PRINT_LIMIT;
            String tableName =
                    OutboxTable.validateTableName(options.getOrDefault("--table", OutboxTable.DEFAULT_TABLE_NAME));
            SimpleDriverDataSource dataSource = new SimpleDriverDataSource();
            dataSource.setDriverClass(driver(url));
            dataSource.setUrl(url);
            dataSource.setUsername(options.getOrDefault("--user", ""));
            dataSource.setPassword(options.getOrDefault("--password", ""));
            OutboxTable table =
                    OutboxTable.builder(dataSource).tableName(tableName).build();
            OutboxBackfill.Builder builder = OutboxBackfill.builder(table, query)
                    .skipExisting(!flags.contains("--no-skip-existing"))
                    .interval(interval)
                    .batchSize(batchSize)
                    .printLimit(printLimit);
            if (options.containsKey("--topic")) {
                builder.defaultTopic(options.get("--topic"));
            }
            builder.build().run(flags.contains("--execute"), out);
            return 0;
        } catch (IllegalArgumentException | IOException ex) {
            err.println("outbox backfill: " + ex.getMessage());
            err.println("Run with --help for the options.");
            return 2;
        } catch (RuntimeException ex) {
            err.println("outbox backfill failed: " + ex.getMessage());
            return 1;
        }
    }

    private static int number(Map<String, String> options, String name) {
        try {
            return Integer.parseInt(options.get(name));
        } catch (NumberFormatException ex) {
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
            return (Class<? extends java.sql.Driver>)
                    java.sql.DriverManager.getDriver(url).getClass();
        } catch (SQLException ex) {
            throw new IllegalArgumentException(
                    "No JDBC driver on the class path accepts " + url + " (add the driver jar)");
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
        } catch (RuntimeException ex) {
            throw new IllegalArgumentException("Invalid duration '" + text + "': use 200ms, 5s, 2m, 1h, 1d or PT5S");
        }
    }

    /** The command line's help text. */
    public static String usage() {
        return """
                Usage: java -cp <classpath> io.sumi.outbox.cli.OutboxBackfillCommand --url <jdbc-url> --query <sql> [options]

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
}
