package io.sumi.outbox;

import io.sumi.jdbc.DatabaseType;
import io.sumi.jdbc.internal.InstantBinding;
import io.sumi.jdbc.internal.SqlIdentifiers;
import io.sumi.jdbc.internal.SqlTemplate;
import io.sumi.outbox.internal.HeadersJson;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * The outbox's SQL for one database. What differs per vendor (the claim, the bounded delete, time
 * binding) lives in a subclass; the rest lives here.
 *
 * <p>SQL: each statement is a named text-block constant ({@code SQL_STATEMENT_*}) in the class of
 * its vendor, or here when every vendor shares it. The table name is formatted into the statements
 * ({@link SqlTemplate}); {@link #of} validates it as an SQL identifier before a dialect is made.
 * Every other value is a bind parameter.
 *
 * <p>The claim. A pending row is one with {@code dispatched_at IS NULL}; it may be claimed when it
 * is not parked, is due ({@code available_at <= now}) and has no live lease. For an ordered topic
 * it must also be the earliest undispatched row of its topic and aggregate ("head-only"): a row
 * waits while an earlier one of the same aggregate is in flight, in backoff or parked. That test
 * reads {@code dispatched_at}, which only ever changes from {@code NULL} to a time, so a stale view
 * of it can only make the claim more cautious, never let a row overtake an earlier one. Each
 * subclass claims in ONE statement that picks the rows (skipping rows other claims have locked,
 * where the database supports that) and writes the claim token and lease on them, re-checking the
 * lease on the newest version of each row; the statement commits before anything is sent.
 *
 * <p>Time. Leases are the database's business: the claim writes {@code lease_until} as the
 * database's current time plus the lease and tests a lease against the database's current time
 * (each vendor spells its clock in its statements), so dispatchers whose clocks
 * disagree never take each other's live leases. Due times ({@code available_at}: delays and
 * back-off) and the recorded times ({@code created_at}, {@code dispatched_at}, {@code parked_at})
 * come from the dispatcher's {@link java.time.Clock}: skew there shifts when a row becomes due,
 * never who holds it.
 *
 * <p>Package-private beside {@link OutboxTable}, not in {@code io.sumi.outbox.internal}: it reads
 * and writes this package's {@link OutboxRecord}, {@link DispatchOutcome} and {@link OutboxStats},
 * and an internal package that depends on its API package makes a package cycle.
 */
abstract class OutboxDialect {

    // The statements every vendor shares; the slot ${table} is filled once, the others per call.

    /** Parameters: aggregate id, topic, payload, headers, created at, available at. */
    private static final String SQL_STATEMENT_INSERT = """
            INSERT INTO ${table} (aggregate_id, topic, payload, headers, created_at, available_at, attempts)
            VALUES (?, ?, ?, ?, ?, ?, 0)
            """;

    /**
     * The ids are ONE array parameter, not an {@code IN (?, ?, ...)} list: one statement text for
     * every batch size (one server-side plan, one entry in the statement caches) and one bind.
     * PostgreSQL and H2; MariaDB, which has no arrays, overrides {@link #markDispatched}.
     * Parameters: dispatched at, outcome, claim token, the ids (a {@code BIGINT} array).
     */
    private static final String SQL_STATEMENT_MARK_DISPATCHED = """
            UPDATE ${table}
               SET dispatched_at = ?, dispatch_outcome = ?, lease_until = NULL
             WHERE claim_token = ? AND dispatched_at IS NULL AND id = ANY(?)
            """;

    /**
     * {@code lease_until IS NOT NULL}: a mark that is run again (its first commit's answer was lost
     * with the connection) counts the attempt once. Parameters: error, available at, parked at, id,
     * claim token.
     */
    private static final String SQL_STATEMENT_MARK_FAILED = """
            UPDATE ${table}
               SET attempts = attempts + 1, last_error = ?, available_at = ?, parked_at = ?, lease_until = NULL
             WHERE id = ? AND claim_token = ? AND dispatched_at IS NULL AND lease_until IS NOT NULL
            """;

    private static final String SQL_STATEMENT_STATS = """
            SELECT COUNT(*) AS undispatched, COUNT(parked_at) AS parked,
                   MIN(CASE WHEN parked_at IS NULL THEN available_at END) AS oldest_due
              FROM ${table}
             WHERE dispatched_at IS NULL
            """;

    /** Parameters: id. */
    private static final String SQL_STATEMENT_FIND_BY_ID = """
            SELECT id, aggregate_id, topic, payload, headers, created_at, available_at, dispatched_at, attempts,
                   last_error, parked_at, dispatch_outcome
              FROM ${table}
             WHERE id = ?
            """;

    /** Parameters: limit. */
    private static final String SQL_STATEMENT_PARKED = """
            SELECT id, aggregate_id, topic, payload, headers, created_at, available_at, dispatched_at, attempts,
                   last_error, parked_at, dispatch_outcome
              FROM ${table}
             WHERE dispatched_at IS NULL AND parked_at IS NOT NULL
             ORDER BY id LIMIT ?
            """;

    /**
     * Makes parked rows pending again; {@code ${which}} is empty (all), {@code AND id = ?} or
     * {@code AND topic = ?}. Parameters: available at, then the id or topic.
     */
    private static final String SQL_STATEMENT_REDRIVE = """
            UPDATE ${table}
               SET parked_at = NULL, attempts = 0, available_at = ?, lease_until = NULL
             WHERE dispatched_at IS NULL AND parked_at IS NOT NULL ${which}
            """;

    /** Parameters: topic, then the aggregate ids of {@code ${aggregateIds}}. */
    private static final String SQL_STATEMENT_EXISTING_AGGREGATES = """
            SELECT DISTINCT aggregate_id FROM ${table} WHERE topic = ? AND aggregate_id IN (${aggregateIds})
            """;

    /**
     * The rows a claim may take (see {@link #candidates}). {@code ${now}} is the vendor's clock,
     * {@code ${ordered}} the head-only condition of ordered topics (or nothing), {@code ${order}}
     * the vendor's spelling of id order. Parameters: now, then the topics of {@code ${ordered}}.
     */
    private static final String SQL_QUERY_CANDIDATES = """
            SELECT c.id FROM ${table} c
             WHERE c.dispatched_at IS NULL AND c.parked_at IS NULL AND c.available_at <= ?
               AND (c.lease_until IS NULL OR c.lease_until <= ${now})${ordered}
             ORDER BY ${order}
            """;

    /** Head-only: no earlier undispatched row of the candidate's topic and aggregate. */
    private static final String SQL_CONDITION_NO_EARLIER_ROW = """
            NOT EXISTS (SELECT 1 FROM ${table} e
                         WHERE e.topic = c.topic AND e.aggregate_id = c.aggregate_id AND e.dispatched_at IS NULL
                           AND e.id < c.id)
            """;

    protected final String table;

    private final InstantBinding instants;
    private final String insert;
    private final String markDispatched;
    private final String markFailed;
    private final String stats;
    private final String findById;
    private final String parked;
    private final String redriveOne;
    private final String redriveAll;
    private final String redriveTopic;
    private final String existingAggregates;
    private final String candidates;
    private final String noEarlierRow;

    /**
     * The dialect of {@code type} for the outbox table {@code table}.
     *
     * @param table a table name already checked by {@link io.sumi.jdbc.internal.SqlIdentifiers}
     */
    public static OutboxDialect of(DatabaseType type, String table) {
        SqlIdentifiers.requireTableName(table, "outbox", "outbox");
        return switch (type) {
            case POSTGRESQL -> new PostgresOutboxDialect(table);
            case MARIADB -> new MariaDbOutboxDialect(table);
            case H2 -> new H2OutboxDialect(table);
        };
    }

    /**
     * @param table a table name checked by {@link SqlIdentifiers}
     * @param now the vendor's SQL for the database's current time, comparable with the lease column
     * @param candidateOrder the vendor's spelling of id order among pending rows (see {@link #candidates})
     */
    protected OutboxDialect(String table, InstantBinding instants, String now, String candidateOrder) {
        this.table = table;
        this.instants = instants;
        this.insert = SqlTemplate.fill(SQL_STATEMENT_INSERT, "table", table);
        this.markDispatched = SqlTemplate.fill(SQL_STATEMENT_MARK_DISPATCHED, "table", table);
        this.markFailed = SqlTemplate.fill(SQL_STATEMENT_MARK_FAILED, "table", table);
        this.stats = SqlTemplate.fill(SQL_STATEMENT_STATS, "table", table);
        this.findById = SqlTemplate.fill(SQL_STATEMENT_FIND_BY_ID, "table", table);
        this.parked = SqlTemplate.fill(SQL_STATEMENT_PARKED, "table", table);
        this.redriveOne = SqlTemplate.fill(SQL_STATEMENT_REDRIVE, "table", table, "which", "AND id = ?");
        this.redriveAll = SqlTemplate.fill(SQL_STATEMENT_REDRIVE, "table", table, "which", "");
        this.redriveTopic = SqlTemplate.fill(SQL_STATEMENT_REDRIVE, "table", table, "which", "AND topic = ?");
        this.existingAggregates = SqlTemplate.fill(SQL_STATEMENT_EXISTING_AGGREGATES, "table", table);
        this.candidates = SqlTemplate.fill(SQL_QUERY_CANDIDATES, "table", table, "now", now, "order", candidateOrder);
        this.noEarlierRow = SqlTemplate.fill(SQL_CONDITION_NO_EARLIER_ROW, "table", table);
    }

    /** The rows a dispatcher may claim: which topics keep per-aggregate order. */
    public record Ordering(boolean allTopics, Set<String> topics) {

        public Ordering {
            topics = Set.copyOf(topics);
        }

        public boolean none() {
            return !allTopics && topics.isEmpty();
        }
    }

    /** A claim statement prepared for one ordering, reused for every claim of one dispatcher. */
    public interface Claim {

        /**
         * Claims at most {@code limit} due rows ({@code available_at <= now}) for
         * {@code claimToken}, leasing them for {@code lease} from the database's current time, in
         * one statement of the connection's transaction.
         *
         * @param now the dispatcher's time, for due times only (never for leases)
         * @return the claimed rows, in id order
         */
        List<OutboxRecord> claim(Connection connection, long claimToken, Instant now, Duration lease, int limit)
                throws SQLException;
    }

    /** Prepares the claim for {@code ordering}. */
    public abstract Claim claim(Ordering ordering);

    /**
     * A claim restricted to given rows (the CDC path, which learns the ids from the database's log):
     * the same rules as {@link Claim} (pending, not parked, due, no live lease, head-only for
     * ordered topics), among {@code ids} only.
     */
    public interface ClaimAmong {

        /**
         * Claims those of {@code ids} that a {@link Claim} could take now, for {@code claimToken},
         * leasing them for {@code lease} from the database's current time, in one statement.
         *
         * @return the claimed rows, in id order
         */
        List<OutboxRecord> claim(
                Connection connection, long claimToken, Instant now, Duration lease, Collection<Long> ids)
                throws SQLException;
    }

    /**
     * Prepares the claim among given ids for {@code ordering}.
     *
     * @throws UnsupportedOperationException where the vendor has none (only PostgreSQL, the one
     *     database the CDC path reads, has it)
     */
    public ClaimAmong claimAmong(Ordering ordering) {
        throw new UnsupportedOperationException("Claiming among given outbox rows is implemented for PostgreSQL only");
    }

    /**
     * The vendor's statement that deletes at most {@code limit} rows dispatched before a cutoff.
     * Parameters: the cutoff, the limit.
     */
    protected abstract String deleteDispatchedBefore();

    /** Deletes at most {@code limit} rows dispatched before {@code cutoff}, at {@link #readCommitted READ COMMITTED}. */
    public int deleteDispatchedBefore(Connection connection, Instant cutoff, int limit) throws SQLException {
        readCommitted(connection);
        try (PreparedStatement statement = connection.prepareStatement(deleteDispatchedBefore())) {
            setInstant(statement, 1, cutoff);
            statement.setInt(2, limit);
            return statement.executeUpdate();
        }
    }

    /**
     * A claim that is one statement which picks, leases and returns the rows. Parameters: those of
     * {@link #bindCandidates}, then the limit, the claim token and the lease in milliseconds.
     */
    protected Claim claimInOneStatement(String sql, Ordering ordering) {
        return (connection, claimToken, now, lease, limit) -> {
            try (PreparedStatement statement = connection.prepareStatement(sql)) {
                int index = bindCandidates(statement, 1, ordering, now);
                statement.setInt(index++, limit);
                statement.setLong(index++, claimToken);
                statement.setLong(index, lease.toMillis());
                return inIdOrder(readClaimedRows(statement));
            }
        };
    }

    /**
     * Runs a claim's statement and reads the rows it returns: {@link #readRows} unless the vendor's
     * claim text carries statements before the claim (PostgreSQL's plan settings).
     */
    protected List<OutboxRecord> readClaimedRows(PreparedStatement statement) throws SQLException {
        return readRows(statement);
    }

    /**
     * Makes the next transaction on {@code connection} run at READ COMMITTED, where the database
     * needs that for the dispatcher's statements not to block on, or gap-lock against, the
     * appending transactions. A no-op unless overridden.
     */
    public void readCommitted(Connection connection) throws SQLException {}

    /**
     * Refreshes the planner's statistics of the table after a bulk insert, where the database does
     * not do so soon by itself. A no-op unless overridden.
     */
    public void analyze(Connection connection) throws SQLException {}

    /**
     * The pending rows the planner's statistics of the table count, for the dispatcher's check
     * that they are not provably stale ({@link StatisticsCheck}); {@code null} where the database
     * keeps no such statistics, or its claim's plan does not depend on them (unless overridden).
     */
    public @Nullable PendingEstimate pendingEstimate(Connection connection) throws SQLException {
        return null;
    }

    /**
     * What the planner believes of the pending rows.
     *
     * @param pendingRows the pending rows its statistics count
     * @param refreshable whether this connection's user may refresh them ({@link #analyze})
     */
    public record PendingEstimate(double pendingRows, boolean refreshable) {}

    // ---------------------------------------------------------------- candidates

    /**
     * The rows a claim may take, locked and skipping rows others have locked: {@code SELECT c.id
     * ... ORDER BY c.id}, without the limit and lock clauses, which the vendors spell differently.
     * Parameters: see {@link #bindCandidates}.
     */
    protected String candidates(Ordering ordering) {
        return candidates(ordering, "");
    }

    /**
     * {@link #candidates(Ordering)} with {@code extra} (a condition on {@code c} starting with
     * {@code AND}, or nothing) before the ordering's condition: its parameters bind after
     * {@code now} and before the ordered topics.
     */
    protected String candidates(Ordering ordering, String extra) {
        String ordered;
        if (ordering.allTopics()) {
            ordered = " AND " + noEarlierRow;
        } else if (!ordering.topics().isEmpty()) {
            ordered = " AND (c.topic NOT IN (" + placeholders(ordering.topics().size()) + ") OR " + noEarlierRow + ")";
        } else {
            ordered = "";
        }
        return SqlTemplate.fill(candidates, "ordered", extra + ordered);
    }

    /** Binds the parameters of {@link #candidates} from {@code index}; returns the next index. */
    protected int bindCandidates(PreparedStatement statement, int index, Ordering ordering, Instant now)
            throws SQLException {
        setInstant(statement, index++, now);
        if (!ordering.allTopics()) {
            for (String topic : ordering.topics()) {
                statement.setString(index++, topic);
            }
        }
        return index;
    }

    // ---------------------------------------------------------------- writes

    /** Inserts one row; returns its id. */
    public long insert(
            Connection connection,
            String aggregateId,
            String topic,
            String payload,
            String headers,
            Instant createdAt,
            Instant availableAt)
            throws SQLException {
        try (PreparedStatement statement = connection.prepareStatement(insert, new String[] {"id"})) {
            bindInsert(statement, aggregateId, topic, payload, headers, createdAt, availableAt);
            statement.executeUpdate();
            try (ResultSet keys = statement.getGeneratedKeys()) {
                if (!keys.next()) {
                    throw new SQLException("The database returned no id for the outbox row");
                }
                return keys.getLong(1);
            }
        }
    }

    /** A row to insert. */
    public record NewRow(
            String aggregateId, String topic, String payload, String headers, Instant createdAt, Instant availableAt) {}

    /** Inserts rows in one JDBC batch; returns their ids, in order. */
    public List<Long> insertAll(Connection connection, List<NewRow> rows) throws SQLException {
        if (rows.isEmpty()) {
            return List.of();
        }
        try (PreparedStatement statement = connection.prepareStatement(insert, new String[] {"id"})) {
            for (NewRow row : rows) {
                bindInsert(
                        statement,
                        row.aggregateId(),
                        row.topic(),
                        row.payload(),
                        row.headers(),
                        row.createdAt(),
                        row.availableAt());
                statement.addBatch();
            }
            statement.executeBatch();
            List<Long> ids = new ArrayList<>(rows.size());
            try (ResultSet keys = statement.getGeneratedKeys()) {
                while (keys.next()) {
                    ids.add(keys.getLong(1));
                }
            }
            if (ids.size() != rows.size()) {
                throw new SQLException(
                        "The database returned " + ids.size() + " ids for " + rows.size() + " outbox rows");
            }
            return ids;
        }
    }

    private void bindInsert(
            PreparedStatement statement,
            String aggregateId,
            String topic,
            String payload,
            String headers,
            Instant createdAt,
            Instant availableAt)
            throws SQLException {
        statement.setString(1, aggregateId);
        statement.setString(2, topic);
        statement.setString(3, payload);
        statement.setString(4, headers);
        setInstant(statement, 5, createdAt);
        setInstant(statement, 6, availableAt);
    }

    /**
     * Marks the rows of a claim dispatched, in one statement whose text does not depend on the
     * number of ids; returns how many were still this claim's.
     */
    public int markDispatched(
            Connection connection, long claimToken, Collection<Long> ids, Instant at, DispatchOutcome outcome)
            throws SQLException {
        if (ids.isEmpty()) {
            return 0;
        }
        java.sql.Array idArray = connection.createArrayOf("bigint", ids.toArray(Long[]::new));
        try (PreparedStatement statement = connection.prepareStatement(markDispatched)) {
            setInstant(statement, 1, at);
            statement.setString(2, outcome.name());
            statement.setLong(3, claimToken);
            statement.setArray(4, idArray);
            return statement.executeUpdate();
        } finally {
            idArray.free();
        }
    }

    /** A failed send to record. */
    public record Failure(
            long id,
            @Nullable String error,
            Instant availableAt,
            @Nullable Instant parkedAt) {}

    /** Records failed sends (one JDBC batch, in the caller's transaction); returns how many were still this claim's. */
    public int markFailed(Connection connection, long claimToken, List<Failure> failures) throws SQLException {
        if (failures.isEmpty()) {
            return 0;
        }
        try (PreparedStatement statement = connection.prepareStatement(markFailed)) {
            for (Failure failure : failures) {
                statement.setString(1, failure.error());
                setInstant(statement, 2, failure.availableAt());
                setInstant(statement, 3, failure.parkedAt());
                statement.setLong(4, failure.id());
                statement.setLong(5, claimToken);
                statement.addBatch();
            }
            int updated = 0;
            for (int count : statement.executeBatch()) {
                updated += count == Statement.SUCCESS_NO_INFO ? 1 : Math.max(count, 0);
            }
            return updated;
        }
    }

    /** Makes parked rows pending again, due at {@code now}, with their attempts reset. */
    public int redrive(Connection connection, @Nullable Long id, @Nullable String topic, boolean all, Instant now)
            throws SQLException {
        String sql = id != null ? redriveOne : topic != null ? redriveTopic : redriveAll;
        if (id == null && topic == null && !all) {
            return 0;
        }
        try (PreparedStatement statement = connection.prepareStatement(sql)) {
            setInstant(statement, 1, now);
            if (id != null) {
                statement.setLong(2, id);
            } else if (topic != null) {
                statement.setString(2, topic);
            }
            return statement.executeUpdate();
        }
    }

    // ---------------------------------------------------------------- reads

    /** Counts the backlog. */
    public OutboxStats stats(Connection connection, Instant now) throws SQLException {
        try (PreparedStatement statement = connection.prepareStatement(stats);
                ResultSet rs = statement.executeQuery()) {
            if (!rs.next()) {
                return OutboxStats.EMPTY;
            }
            long undispatched = rs.getLong("undispatched");
            long parkedRows = rs.getLong("parked");
            Instant oldestDue = getInstant(rs, "oldest_due");
            Duration age =
                    oldestDue == null || oldestDue.isAfter(now) ? Duration.ZERO : Duration.between(oldestDue, now);
            return new OutboxStats(undispatched - parkedRows, parkedRows, oldestDue, age);
        }
    }

    public Optional<OutboxRecord> find(Connection connection, long id) throws SQLException {
        try (PreparedStatement statement = connection.prepareStatement(findById)) {
            statement.setLong(1, id);
            List<OutboxRecord> rows = readRows(statement);
            return rows.isEmpty() ? Optional.empty() : Optional.of(rows.get(0));
        }
    }

    public List<OutboxRecord> parked(Connection connection, int limit) throws SQLException {
        try (PreparedStatement statement = connection.prepareStatement(parked)) {
            statement.setInt(1, limit);
            return readRows(statement);
        }
    }

    /** Which of {@code aggregateIds} already have a row of {@code topic}, dispatched or not. */
    public Set<String> existingAggregates(Connection connection, String topic, Collection<String> aggregateIds)
            throws SQLException {
        if (aggregateIds.isEmpty()) {
            return Set.of();
        }
        String sql = SqlTemplate.fill(existingAggregates, "aggregateIds", placeholders(aggregateIds.size()));
        try (PreparedStatement statement = connection.prepareStatement(sql)) {
            statement.setString(1, topic);
            int index = 2;
            for (String aggregateId : aggregateIds) {
                statement.setString(index++, aggregateId);
            }
            Set<String> existing = new HashSet<>();
            try (ResultSet rs = statement.executeQuery()) {
                while (rs.next()) {
                    existing.add(rs.getString(1));
                }
            }
            return existing;
        }
    }

    protected List<OutboxRecord> readRows(PreparedStatement statement) throws SQLException {
        return readRows(statement.executeQuery());
    }

    /** Reads every row of {@code rs}, then closes it. */
    protected List<OutboxRecord> readRows(ResultSet rs) throws SQLException {
        List<OutboxRecord> rows = new ArrayList<>();
        try (rs) {
            while (rs.next()) {
                rows.add(readRow(rs));
            }
        }
        return rows;
    }

    protected OutboxRecord readRow(ResultSet rs) throws SQLException {
        String outcome = rs.getString("dispatch_outcome");
        String headers = rs.getString("headers");
        Instant createdAt = getInstant(rs, "created_at");
        Instant availableAt = getInstant(rs, "available_at");
        return new OutboxRecord(
                rs.getLong("id"),
                rs.getString("aggregate_id"),
                rs.getString("topic"),
                rs.getString("payload"),
                headers == null || headers.isBlank() ? Collections.emptyMap() : HeadersJson.read(headers),
                createdAt != null ? createdAt : Instant.EPOCH,
                availableAt != null ? availableAt : Instant.EPOCH,
                getInstant(rs, "dispatched_at"),
                rs.getInt("attempts"),
                rs.getString("last_error"),
                getInstant(rs, "parked_at"),
                outcome == null ? null : DispatchOutcome.valueOf(outcome));
    }

    /** Sorts claimed rows by id (RETURNING gives no order). */
    protected static List<OutboxRecord> inIdOrder(List<OutboxRecord> rows) {
        rows.sort((a, b) -> Long.compare(a.id(), b.id()));
        return rows;
    }

    // ---------------------------------------------------------------- time

    /** Binds an instant as the vendor's timestamp type, in UTC. */
    public final void setInstant(PreparedStatement statement, int index, @Nullable Instant instant)
            throws SQLException {
        instants.set(statement, index, instant);
    }

    /** Reads an instant written by {@link #setInstant}. */
    public final @Nullable Instant getInstant(ResultSet resultSet, String column) throws SQLException {
        return instants.get(resultSet, column);
    }

    protected static String placeholders(int count) {
        return String.join(", ", Collections.nCopies(count, "?"));
    }
}
