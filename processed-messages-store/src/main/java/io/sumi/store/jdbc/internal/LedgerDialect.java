package io.sumi.store.jdbc.internal;

import io.sumi.jdbc.DatabaseType;
import io.sumi.jdbc.internal.InstantBinding;
import io.sumi.jdbc.internal.SqlIdentifiers;
import io.sumi.jdbc.internal.SqlTemplate;
import io.sumi.store.ClaimRequest;
import io.sumi.store.ConsumerLedgerStats;
import io.sumi.store.MessageStatus;
import io.sumi.store.ProcessedMessage;
import io.sumi.store.StoredReply;
import io.sumi.store.StoredReplyCodec;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * The SQL of the ledger for one database. Every vendor difference lives in a subclass; what is
 * the same everywhere (complete, release, find) lives here.
 *
 * <p>Time: every time the ledger writes and every lease decision (take over when
 * {@code lease_until <= now}, the lease's end, the release's "now", the completion time) is the
 * database's clock, written into the statement (each vendor names its clock once, in its
 * constructor); a lease is bound as a number of microseconds added to it ({@link #micros}). Instances whose clocks disagree therefore
 * agree on every lease, and no statement needs an extra round trip to read the database's clock.
 *
 * <p>SQL: each statement is a named text-block constant ({@code SQL_STATEMENT_*}) in the class of
 * its vendor, or here when every vendor shares it. The table name is formatted into the statements
 * ({@link SqlTemplate}); {@link #of} validates it as an SQL identifier before a dialect is made, so
 * nothing a user writes is ever formatted into SQL unchecked.
 */
public abstract class LedgerDialect {

    // The statements every vendor shares. Slots: ${table}; ${now}, the vendor's clock; and
    // ${messageIdIn}, the vendor's condition on a list of ids (see messageIdIn), filled per call.

    /**
     * The rows pruning deletes, with the cutoff bound twice: completed rows processed before it,
     * and in-progress rows whose lease ended before it (claims released after a failure and never
     * taken again, e.g. dead-lettered messages). Live claims and rows held for reconciliation stay.
     * The cutoff comes from the pruner's clock (retention is measured in days, so clock skew only
     * shifts it by the skew); a claim is additionally pruned only once its lease has ended by the
     * database's clock, so no pruner clock, however far ahead, deletes a live claim.
     */
    private static final String SQL_CONDITION_PRUNABLE = """
            ((status = 'COMPLETED' AND processed_at < ?)
              OR (status = 'IN_PROGRESS' AND lease_until < ? AND lease_until <= ${now}))
            """;

    /**
     * Completes claims, fenced on their token (not on their lease: a claim whose lease ended but
     * that nobody took over is still the caller's). Parameters: consumer, claim token, the ids.
     */
    private static final String SQL_STATEMENT_COMPLETE = """
            UPDATE ${table}
               SET status = 'COMPLETED', processed_at = ${now}, lease_until = NULL, last_error = NULL
             WHERE consumer = ? AND claim_token = ? AND status = 'IN_PROGRESS' AND ${messageIdIn}
            """;

    /**
     * {@link #SQL_STATEMENT_COMPLETE} for one claim whose handler's reply is kept: the reply is
     * written by the statement that completes the row, so a completed row of a handler that keeps
     * replies never lacks its reply. Parameters: the reply column, consumer, claim token, message id.
     */
    private static final String SQL_STATEMENT_COMPLETE_WITH_REPLY = """
            UPDATE ${table}
               SET status = 'COMPLETED', processed_at = ${now}, lease_until = NULL, last_error = NULL, reply = ?
             WHERE consumer = ? AND claim_token = ? AND status = 'IN_PROGRESS' AND message_id = ?
            """;

    /**
     * Writes the reply of a transactional-mode claim, in the caller's transaction (the row was
     * inserted {@code COMPLETED} by it), fenced on the claim token. Parameters: the reply column,
     * consumer, message id, claim token.
     */
    private static final String SQL_STATEMENT_STORE_REPLY = """
            UPDATE ${table} SET reply = ?
             WHERE consumer = ? AND message_id = ? AND claim_token = ? AND status = 'COMPLETED'
            """;

    /** The reply kept with a completed row. Parameters: consumer, message id. */
    private static final String SQL_STATEMENT_FIND_REPLY = """
            SELECT reply FROM ${table} WHERE consumer = ? AND message_id = ? AND status = 'COMPLETED'
            """;

    /**
     * Ends the lease at the database's now (rather than deleting the row): the attempt count and
     * the last error stay for operators, and the next claim, whose now is not earlier, takes the
     * row over. Parameters: error, consumer, claim token, the ids.
     */
    private static final String SQL_STATEMENT_RELEASE = """
            UPDATE ${table}
               SET lease_until = ${now}, last_error = ?
             WHERE consumer = ? AND claim_token = ? AND status = 'IN_PROGRESS' AND ${messageIdIn}
            """;

    /**
     * Gives back claims whose handler never started, step 1: the rows the claims inserted (a claim
     * inserts with {@code attempts = 1}, a take-over counts at least 2) are deleted, as if never
     * claimed. Parameters: consumer, claim token, the ids.
     */
    private static final String SQL_STATEMENT_DELETE_UNRUN = """
            DELETE FROM ${table}
             WHERE consumer = ? AND claim_token = ? AND status = 'IN_PROGRESS' AND attempts <= 1 AND ${messageIdIn}
            """;

    /**
     * Step 2: the rows the claims took over get the attempt count they had before (the take-over
     * added one; {@code first_seen_at} and {@code last_error} were left as they were), their lease
     * ends now as on {@link #SQL_STATEMENT_RELEASE}, and a token nobody holds, so that this cannot
     * be applied twice. Parameters: the new token, consumer, claim token, the ids.
     */
    private static final String SQL_STATEMENT_RESTORE_UNRUN = """
            UPDATE ${table}
               SET attempts = attempts - 1, lease_until = ${now}, claim_token = ?
             WHERE consumer = ? AND claim_token = ? AND status = 'IN_PROGRESS' AND attempts > 1 AND ${messageIdIn}
            """;

    /** Parameters: reason, consumer, claim token, message id. */
    private static final String SQL_STATEMENT_MARK_FOR_RECONCILIATION = """
            UPDATE ${table}
               SET status = 'RECONCILE', lease_until = NULL, last_error = ?
             WHERE consumer = ? AND claim_token = ? AND status = 'IN_PROGRESS' AND message_id = ?
            """;

    /** Parameters: consumer, the ids. */
    /** Extends live claims, fenced on their token. Slot ${leaseUntil}: the vendor's now plus a bound lease. */
    private static final String SQL_STATEMENT_RENEW = """
            UPDATE ${table}
               SET lease_until = ${leaseUntil}
             WHERE consumer = ? AND claim_token = ? AND status = 'IN_PROGRESS' AND ${messageIdIn}
            """;

    /** Per consumer, the first claim of its oldest live claim, and the database's now it was read at. */
    private static final String SQL_STATEMENT_OLDEST_LIVE_CLAIMS = """
            SELECT consumer, MIN(first_seen_at) AS oldest, MAX(${now}) AS read_at
              FROM ${table}
             WHERE status = 'IN_PROGRESS' AND lease_until > ${now}
             GROUP BY consumer
            """;

    private static final String SQL_STATEMENT_HELD_FOR_RECONCILIATION = """
            SELECT consumer, COUNT(*) AS held FROM ${table} WHERE status = 'RECONCILE' GROUP BY consumer
            """;

    /** An operator found that a held message's effect happened. */
    private static final String SQL_STATEMENT_COMPLETE_RECONCILED = """
            UPDATE ${table}
               SET status = 'COMPLETED', processed_at = ${now}, lease_until = NULL
             WHERE consumer = ? AND message_id = ? AND status = 'RECONCILE'
            """;

    /** An operator found that a held message's effect did not happen: the next delivery claims it anew. */
    private static final String SQL_STATEMENT_DELETE_RECONCILED = """
            DELETE FROM ${table} WHERE consumer = ? AND message_id = ? AND status = 'RECONCILE'
            """;

    private static final String SQL_STATEMENT_FIND = """
            SELECT consumer, message_id, status, claim_token, lease_until, attempts, fingerprint, last_error,
                   first_seen_at, processed_at
              FROM ${table}
             WHERE consumer = ? AND ${messageIdIn}
            """;

    protected final String table;

    private final InstantBinding instants;
    private final String prunable;
    private final String complete;
    private final String release;
    private final String deleteUnrun;
    private final String restoreUnrun;
    private final String markForReconciliation;
    private final String find;
    private final String oldestLiveClaims;
    private final String completeReconciled;
    private final String deleteReconciled;
    private final String heldForReconciliation;
    private final String completeWithReply;
    private final String storeReply;
    private final String findReply;

    /**
     * @param table a table name checked by {@link io.sumi.jdbc.internal.SqlIdentifiers}
     * @param now the vendor's SQL for the database's current time, of the columns' type, in UTC
     */
    protected LedgerDialect(String table, InstantBinding instants, String now) {
        this.table = table;
        this.instants = instants;
        this.prunable = SqlTemplate.fill(SQL_CONDITION_PRUNABLE, "now", now);
        this.complete = SqlTemplate.fill(SQL_STATEMENT_COMPLETE, "table", table, "now", now);
        this.release = SqlTemplate.fill(SQL_STATEMENT_RELEASE, "table", table, "now", now);
        this.deleteUnrun = SqlTemplate.fill(SQL_STATEMENT_DELETE_UNRUN, "table", table);
        this.restoreUnrun = SqlTemplate.fill(SQL_STATEMENT_RESTORE_UNRUN, "table", table, "now", now);
        this.markForReconciliation = SqlTemplate.fill(SQL_STATEMENT_MARK_FOR_RECONCILIATION, "table", table);
        this.find = SqlTemplate.fill(SQL_STATEMENT_FIND, "table", table);
        this.completeReconciled = SqlTemplate.fill(SQL_STATEMENT_COMPLETE_RECONCILED, "table", table, "now", now);
        this.deleteReconciled = SqlTemplate.fill(SQL_STATEMENT_DELETE_RECONCILED, "table", table);
        this.oldestLiveClaims = SqlTemplate.fill(SQL_STATEMENT_OLDEST_LIVE_CLAIMS, "table", table, "now", now);
        this.heldForReconciliation = SqlTemplate.fill(SQL_STATEMENT_HELD_FOR_RECONCILIATION, "table", table);
        this.completeWithReply = SqlTemplate.fill(SQL_STATEMENT_COMPLETE_WITH_REPLY, "table", table, "now", now);
        this.storeReply = SqlTemplate.fill(SQL_STATEMENT_STORE_REPLY, "table", table);
        this.findReply = SqlTemplate.fill(SQL_STATEMENT_FIND_REPLY, "table", table);
    }

    /**
     * The dialect of {@code type} for the ledger table {@code table}.
     *
     * @param table a table name already checked by {@link io.sumi.jdbc.internal.SqlIdentifiers}
     */
    public static LedgerDialect of(DatabaseType type, String table) {
        return of(type, table, false);
    }

    /**
     * The dialect of {@code type} for the ledger table {@code table}; with
     * {@code asynchronousClaimCommit}, PostgreSQL commits lease-mode batch claims without waiting
     * for the WAL flush (the other databases ignore it).
     *
     * @param table a table name already checked by {@link io.sumi.jdbc.internal.SqlIdentifiers}
     */
    public static LedgerDialect of(DatabaseType type, String table, boolean asynchronousClaimCommit) {
        SqlIdentifiers.requireTableName(table, "ledger", "processed_messages");
        return switch (type) {
            case POSTGRESQL -> new PostgresLedgerDialect(table, asynchronousClaimCommit);
            case MARIADB -> new MariaDbLedgerDialect(table);
            case H2 -> new H2LedgerDialect(table);
        };
    }

    /** A lease as the microseconds a claim binds (added to the database's now). */
    protected static long micros(Duration lease) {
        return Math.addExact(Math.multiplyExact(lease.getSeconds(), 1_000_000L), lease.getNano() / 1_000);
    }

    /**
     * Claims the messages in one statement where the database allows it.
     *
     * @param requests distinct message ids, sorted, so that concurrent batches lock rows in one
     *     order and cannot deadlock each other
     * @param lease the lease to write (it ends at the database's now plus {@code lease}), or
     *     {@code null} to insert the rows {@code COMPLETED}
     * @return the rows the statement returned, by message id; an id may be missing when a
     *     concurrent transaction committed it after the statement's snapshot was taken, or, for a
     *     dialect whose batch claim returns only the rows it claimed, when it claimed nothing; the
     *     store reads missing ids with {@link #find}
     */
    public abstract Map<String, ProcessedMessage> claim(
            Connection connection,
            String consumer,
            List<ClaimRequest> requests,
            long claimToken,
            @Nullable Duration lease)
            throws SQLException;

    /** The condition on the rows pruning deletes (SQL_CONDITION_PRUNABLE); the cutoff is bound twice. */
    /** The vendor's SQL for its now plus a lease bound as microseconds (one {@code ?}). */
    protected abstract String nowPlusMicros();

    protected final String prunable() {
        return prunable;
    }

    /**
     * The vendor's statement that deletes at most {@code limit} rows that {@link #prunable()}
     * matches. Parameters: the cutoff (twice), the limit.
     */
    protected abstract String deleteCompletedBefore();

    /** Deletes at most {@code limit} rows that {@link #prunable()} matches. */
    public int deleteCompletedBefore(Connection connection, Instant cutoff, int limit) throws SQLException {
        try (PreparedStatement statement = connection.prepareStatement(deleteCompletedBefore())) {
            setInstant(statement, 1, cutoff);
            setInstant(statement, 2, cutoff);
            statement.setInt(3, limit);
            return statement.executeUpdate();
        }
    }

    /** Binds an instant as the vendor's timestamp type, in UTC. */
    protected final void setInstant(PreparedStatement statement, int index, @Nullable Instant instant)
            throws SQLException {
        instants.set(statement, index, instant);
    }

    /** Reads an instant written by {@link #setInstant}. */
    protected final @Nullable Instant getInstant(ResultSet resultSet, String column) throws SQLException {
        return instants.get(resultSet, column);
    }

    /**
     * Completes claims, fenced on their token (not on their lease: a claim whose lease ended but
     * that nobody took over is still the caller's); {@code processed_at} is the database's now.
     */
    public int complete(Connection connection, String consumer, long claimToken, Collection<String> messageIds)
            throws SQLException {
        String sql = SqlTemplate.fill(complete, "messageIdIn", messageIdIn(messageIds.size()));
        try (PreparedStatement statement = connection.prepareStatement(sql)) {
            statement.setString(1, consumer);
            statement.setLong(2, claimToken);
            bindMessageIds(statement, 3, messageIds);
            return statement.executeUpdate();
        }
    }

    /** Completes one claim and writes its reply in the same statement, fenced like {@link #complete}. */
    public int completeWithReply(
            Connection connection, String consumer, long claimToken, String messageId, StoredReply reply)
            throws SQLException {
        try (PreparedStatement statement = connection.prepareStatement(completeWithReply)) {
            statement.setBytes(1, StoredReplyCodec.encode(reply));
            statement.setString(2, consumer);
            statement.setLong(3, claimToken);
            statement.setString(4, messageId);
            return statement.executeUpdate();
        }
    }

    /** Writes the reply of a row this claim token completed (transactional mode, the caller's transaction). */
    public int storeReply(Connection connection, String consumer, String messageId, long claimToken, StoredReply reply)
            throws SQLException {
        try (PreparedStatement statement = connection.prepareStatement(storeReply)) {
            statement.setBytes(1, StoredReplyCodec.encode(reply));
            statement.setString(2, consumer);
            statement.setString(3, messageId);
            statement.setLong(4, claimToken);
            return statement.executeUpdate();
        }
    }

    /** The reply kept with a completed row; empty if the row is not completed or has none. */
    public Optional<StoredReply> findReply(Connection connection, String consumer, String messageId)
            throws SQLException {
        try (PreparedStatement statement = connection.prepareStatement(findReply)) {
            statement.setString(1, consumer);
            statement.setString(2, messageId);
            try (ResultSet rs = statement.executeQuery()) {
                if (!rs.next()) {
                    return Optional.empty();
                }
                byte[] column = rs.getBytes(1);
                return column == null ? Optional.empty() : Optional.of(StoredReplyCodec.decode(column));
            }
        }
    }

    public int release(
            Connection connection,
            String consumer,
            long claimToken,
            Collection<String> messageIds,
            @Nullable String error)
            throws SQLException {
        String sql = SqlTemplate.fill(release, "messageIdIn", messageIdIn(messageIds.size()));
        try (PreparedStatement statement = connection.prepareStatement(sql)) {
            statement.setString(1, error);
            statement.setString(2, consumer);
            statement.setLong(3, claimToken);
            bindMessageIds(statement, 4, messageIds);
            return statement.executeUpdate();
        }
    }

    /**
     * Gives back claims whose handler never started, so they count no attempt: deletes the rows
     * they inserted and restores the attempt count of the rows they took over, handing those back
     * under {@code handBackToken}. Run both statements in one transaction (the caller's), so that a
     * failure between them leaves nothing half given back.
     *
     * @return how many claims were given back
     */
    public int releaseUnrun(
            Connection connection, String consumer, long claimToken, long handBackToken, Collection<String> messageIds)
            throws SQLException {
        int count;
        try (PreparedStatement statement = connection.prepareStatement(
                SqlTemplate.fill(deleteUnrun, "messageIdIn", messageIdIn(messageIds.size())))) {
            statement.setString(1, consumer);
            statement.setLong(2, claimToken);
            bindMessageIds(statement, 3, messageIds);
            count = statement.executeUpdate();
        }
        try (PreparedStatement statement = connection.prepareStatement(
                SqlTemplate.fill(restoreUnrun, "messageIdIn", messageIdIn(messageIds.size())))) {
            statement.setLong(1, handBackToken);
            statement.setString(2, consumer);
            statement.setLong(3, claimToken);
            bindMessageIds(statement, 4, messageIds);
            count += statement.executeUpdate();
        }
        return count;
    }

    /**
     * Extends claims to the database's now plus {@code lease}, fenced on their token and status
     * like {@link #complete} (a claim whose lease ended but that nobody took over is still the
     * caller's).
     */
    public int renew(
            Connection connection, String consumer, long claimToken, Collection<String> messageIds, Duration lease)
            throws SQLException {
        String sql = SqlTemplate.fill(
                SQL_STATEMENT_RENEW,
                "table",
                table,
                "leaseUntil",
                nowPlusMicros(),
                "messageIdIn",
                messageIdIn(messageIds.size()));
        try (PreparedStatement statement = connection.prepareStatement(sql)) {
            statement.setLong(1, micros(lease));
            statement.setString(2, consumer);
            statement.setLong(3, claimToken);
            bindMessageIds(statement, 4, messageIds);
            return statement.executeUpdate();
        }
    }

    /** Sets a live claim's status to {@code RECONCILE}, fenced on its token like {@link #release}. */
    public int markForReconciliation(
            Connection connection, String consumer, long claimToken, String messageId, @Nullable String reason)
            throws SQLException {
        try (PreparedStatement statement = connection.prepareStatement(markForReconciliation)) {
            statement.setString(1, reason);
            statement.setString(2, consumer);
            statement.setLong(3, claimToken);
            statement.setString(4, messageId);
            return statement.executeUpdate();
        }
    }

    /**
     * Completes a row held for reconciliation (an operator found that its effect happened);
     * {@code processed_at} is the database's now. Only a {@code RECONCILE} row matches.
     */
    public int completeReconciled(Connection connection, String consumer, String messageId) throws SQLException {
        try (PreparedStatement statement = connection.prepareStatement(completeReconciled)) {
            statement.setString(1, consumer);
            statement.setString(2, messageId);
            return statement.executeUpdate();
        }
    }

    /**
     * Deletes a row held for reconciliation (an operator found that its effect did not happen), so
     * that the next delivery claims the message anew. Only a {@code RECONCILE} row matches.
     */
    public int deleteReconciled(Connection connection, String consumer, String messageId) throws SQLException {
        try (PreparedStatement statement = connection.prepareStatement(deleteReconciled)) {
            statement.setString(1, consumer);
            statement.setString(2, messageId);
            return statement.executeUpdate();
        }
    }

    public Map<String, ProcessedMessage> find(Connection connection, String consumer, Collection<String> messageIds)
            throws SQLException {
        String sql = SqlTemplate.fill(find, "messageIdIn", messageIdIn(messageIds.size()));
        try (PreparedStatement statement = connection.prepareStatement(sql)) {
            statement.setString(1, consumer);
            bindMessageIds(statement, 2, messageIds);
            return readRows(statement);
        }
    }

    public Optional<ProcessedMessage> find(Connection connection, String consumer, String messageId)
            throws SQLException {
        return Optional.ofNullable(
                find(connection, consumer, List.of(messageId)).get(messageId));
    }

    /**
     * Per consumer, the age of its oldest live claim and its rows held for reconciliation, in two
     * statements that read only those rows: live claims through the {@code IN_PROGRESS} lease index,
     * held rows through the {@code RECONCILE} status (an index on MariaDB and H2, a partial one on
     * PostgreSQL). The age is measured on the database's clock, which wrote the first claim.
     */
    public Map<String, ConsumerLedgerStats> consumerStats(Connection connection) throws SQLException {
        Map<String, Instant> oldest = new HashMap<>();
        Map<String, Instant> readAt = new HashMap<>();
        try (PreparedStatement statement = connection.prepareStatement(oldestLiveClaims);
                ResultSet rs = statement.executeQuery()) {
            while (rs.next()) {
                String consumer = rs.getString("consumer");
                Instant first = getInstant(rs, "oldest");
                Instant now = getInstant(rs, "read_at");
                if (first != null && now != null) {
                    oldest.put(consumer, first);
                    readAt.put(consumer, now);
                }
            }
        }
        Map<String, Long> held = new HashMap<>();
        try (PreparedStatement statement = connection.prepareStatement(heldForReconciliation);
                ResultSet rs = statement.executeQuery()) {
            while (rs.next()) {
                held.put(rs.getString("consumer"), rs.getLong("held"));
            }
        }
        Map<String, ConsumerLedgerStats> stats = new HashMap<>();
        for (Map.Entry<String, Instant> entry : oldest.entrySet()) {
            String consumer = entry.getKey();
            stats.put(
                    consumer,
                    new ConsumerLedgerStats(
                            consumer,
                            Duration.between(entry.getValue(), readAt.get(consumer)),
                            held.getOrDefault(consumer, 0L)));
        }
        held.forEach((consumer, count) ->
                stats.putIfAbsent(consumer, new ConsumerLedgerStats(consumer, Duration.ZERO, count)));
        return stats;
    }

    protected Map<String, ProcessedMessage> readRows(PreparedStatement statement) throws SQLException {
        Map<String, ProcessedMessage> rows = new HashMap<>();
        try (ResultSet resultSet = statement.executeQuery()) {
            while (resultSet.next()) {
                ProcessedMessage row = readRow(resultSet);
                rows.put(row.messageId(), row);
            }
        }
        return rows;
    }

    protected ProcessedMessage readRow(ResultSet rs) throws SQLException {
        Instant firstSeen = getInstant(rs, "first_seen_at");
        return new ProcessedMessage(
                rs.getString("consumer"),
                rs.getString("message_id"),
                MessageStatus.valueOf(rs.getString("status")),
                rs.getLong("claim_token"),
                getInstant(rs, "lease_until"),
                rs.getInt("attempts"),
                rs.getString("fingerprint"),
                rs.getString("last_error"),
                firstSeen != null ? firstSeen : Instant.EPOCH,
                getInstant(rs, "processed_at"));
    }

    /** The condition that matches {@code count} message ids, bound by {@link #bindMessageIds}. */
    protected String messageIdIn(int count) {
        return "message_id IN (" + placeholders(count) + ")";
    }

    /** Binds the ids of {@link #messageIdIn} from parameter {@code first} on. */
    protected void bindMessageIds(PreparedStatement statement, int first, Collection<String> messageIds)
            throws SQLException {
        bindStrings(statement, first, messageIds);
    }

    protected static String placeholders(int count) {
        return String.join(", ", java.util.Collections.nCopies(count, "?"));
    }

    protected static int bindStrings(PreparedStatement statement, int first, Collection<String> values)
            throws SQLException {
        int index = first;
        for (String value : values) {
            statement.setString(index++, value);
        }
        return index;
    }
}
