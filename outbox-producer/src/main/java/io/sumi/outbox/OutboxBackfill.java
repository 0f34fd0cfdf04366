package io.sumi.outbox;

import io.sumi.outbox.internal.HeadersJson;
import io.sumi.outbox.internal.Jdbc;
import java.io.PrintStream;
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
 * <p>The command line around it is {@link io.sumi.outbox.cli.OutboxBackfillCommand}.
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
    public record Report(int read, int inserted, int skipped, boolean executed) {}

    /**
     * Runs the backfill: a dry run unless {@code execute}, printing the plan to {@code out}.
     *
     * @throws IllegalArgumentException if the query lacks a required column or a row is invalid
     *     (nothing of a dry run, and only whole earlier batches of a real run, are written then)
     * @throws DataAccessException if the query or an insert fails
     */
    public Report run(boolean execute, PrintStream out) {
        Instant start = table.clock().instant();
        out.println((execute ? "Backfilling" : "Dry run (nothing is written; pass --execute to insert):")
                + " outbox table " + table.tableName() + " from:");
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
                        batch.add(columns.read(rs, start, interval, counts.read++));
                        if (batch.size() == batchSize) {
                            process(batch, execute, counts, seen, out);
                            batch.clear();
                        }
                    }
                    process(batch, execute, counts, seen, out);
                }
            } finally {
                connection.rollback();
            }
        } catch (SQLException ex) {
            throw Jdbc.translate("backfill", ex);
        }
        if (execute && counts.inserted > 0) {
            Jdbc.inOwnTransaction(table.dataSource(), "analyze", connection -> {
                table.dialect().analyze(connection);
                return Boolean.TRUE; // Work returns a value; nothing reads this one
            });
        }
        if (counts.printed < counts.inserted + counts.skipped) {
            out.println("  ... and " + (counts.inserted + counts.skipped - counts.printed) + " more");
        }
        out.println((execute ? "Inserted " : "Would insert ") + counts.inserted + " of " + counts.read + " rows"
                + (skipExisting
                        ? "; skipped " + counts.skipped + " whose topic and aggregate are already in the outbox"
                        : "")
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
            boolean skip = skipExisting
                    && (existing.getOrDefault(message.topic(), Set.of()).contains(message.aggregateId())
                            || !seen.add(key));
            if (counts.printed < printLimit) {
                counts.printed++;
                out.println("  " + (skip ? "skip (already in the outbox): " : execute ? "insert: " : "would insert: ")
                        + describe(message, now));
            }
            if (skip) {
                counts.skipped++;
            } else {
                toInsert.add(message);
            }
        }
        if (execute && !toInsert.isEmpty()) {
            List<OutboxDialect.NewRow> rows = new ArrayList<>(toInsert.size());
            for (OutboxMessage message : toInsert) {
                rows.add(new OutboxDialect.NewRow(
                        message.aggregateId(),
                        message.topic(),
                        message.payload(),
                        HeadersJson.write(message.headers()),
                        now,
                        message.availableAt(now)));
            }
            Jdbc.inOwnTransaction(
                    table.dataSource(),
                    "backfill insert",
                    connection -> table.dialect().insertAll(connection, rows));
        }
        counts.inserted += toInsert.size();
    }

    private Map<String, Set<String>> existing(List<OutboxMessage> batch) {
        Map<String, Set<String>> byTopic = new LinkedHashMap<>();
        for (OutboxMessage message : batch) {
            byTopic.computeIfAbsent(message.topic(), topic -> new LinkedHashSet<>())
                    .add(message.aggregateId());
        }
        Map<String, Set<String>> existing = new LinkedHashMap<>();
        for (Map.Entry<String, Set<String>> topic : byTopic.entrySet()) {
            existing.put(
                    topic.getKey(),
                    Jdbc.inOwnTransaction(
                            table.dataSource(),
                            "backfill check",
                            connection ->
                                    table.dialect().existingAggregates(connection, topic.getKey(), topic.getValue())));
        }
        return existing;
    }

    private static String describe(OutboxMessage message, Instant now) {
        String payload = message.payload().replaceAll("\\s+", " ");
        if (payload.length() > PAYLOAD_PREVIEW) {
            payload = payload.substring(0, PAYLOAD_PREVIEW) + "...";
        }
        return "topic=" + message.topic() + " aggregate=" + message.aggregateId() + " available_at="
                + message.availableAt(now)
                + (message.headers().isEmpty() ? "" : " headers=" + HeadersJson.write(message.headers())) + " payload="
                + payload;
    }

    private static final class Counts {
        int read;
        int inserted;
        int skipped;
        int printed;
    }

    /** Where the message's parts are in the query's result. */
    private record Columns(
            int aggregateId,
            int topic,
            int payload,
            int headers,
            int schemaVersion,
            int tenant,
            int traceId,
            int availableAt,
            @Nullable String defaultTopic) {

        static Columns of(ResultSetMetaData metaData, @Nullable String defaultTopic) throws SQLException {
            Map<String, Integer> byName = new LinkedHashMap<>();
            for (int i = 1; i <= metaData.getColumnCount(); i++) {
                byName.putIfAbsent(metaData.getColumnLabel(i).toLowerCase(Locale.ROOT), i);
            }
            int aggregateId = byName.getOrDefault("aggregate_id", 0);
            int topic = byName.getOrDefault("topic", 0);
            int payload = byName.getOrDefault("payload", 0);
            if (aggregateId == 0 || payload == 0 || (topic == 0 && defaultTopic == null)) {
                throw new IllegalArgumentException(
                        "The backfill query must return the columns aggregate_id, payload and topic"
                                + " (or give a default topic with --topic); optional: headers, schema_version, tenant_id, trace_id,"
                                + " available_at. It returned: " + String.join(", ", byName.keySet()));
            }
            return new Columns(
                    aggregateId,
                    topic,
                    payload,
                    byName.getOrDefault("headers", 0),
                    byName.getOrDefault("schema_version", 0),
                    byName.getOrDefault("tenant_id", byName.getOrDefault("tenant", 0)),
                    byName.getOrDefault("trace_id", 0),
                    byName.getOrDefault("available_at", 0),
                    defaultTopic);
        }

        OutboxMessage read(ResultSet rs, Instant start, Duration interval, int index) throws SQLException {
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

        private static void text(ResultSet rs, int column, java.util.function.Consumer<String> setter)
                throws SQLException {
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
            } catch (SQLException | RuntimeException ex) {
                Timestamp value = rs.getTimestamp(column);
                return value == null ? null : value.toInstant();
            }
        }
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
