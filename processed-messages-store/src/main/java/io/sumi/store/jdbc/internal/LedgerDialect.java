package io.sumi.store.jdbc.internal;

import io.sumi.jdbc.DatabaseType;
import io.sumi.jdbc.internal.InstantBinding;
import io.sumi.store.ClaimRequest;
import io.sumi.store.MessageStatus;
import io.sumi.store.ProcessedMessage;
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
 * database's clock, written into the statement as {@link #now()}; a lease is bound as a number of
 * microseconds added to it ({@link #nowPlusMicros()}). Instances whose clocks disagree therefore
 * agree on every lease, and no statement needs an extra round trip to read the database's clock.
 *
 * <p>The table name is formatted into the statements; it is validated as an SQL identifier before
 * a dialect is made, so nothing a user writes is ever formatted into SQL unchecked.
 */
public abstract class LedgerDialect {

    /** The columns every statement reads, in this order. */
    protected static final String COLUMNS =
            "consumer, message_id, status, claim_token, lease_until, attempts, fingerprint, last_error, first_seen_at, processed_at";

    protected final String table;

    private final InstantBinding instants;

    protected LedgerDialect(String table, InstantBinding instants) {
        this.table = table;
        this.instants = instants;
    }

    /**
     * The dialect of {@code type} for the ledger table {@code table}.
     *
     * @param table a table name already checked by {@link io.sumi.jdbc.internal.SqlIdentifiers}
     */
    public static LedgerDialect of(DatabaseType type, String table) {
        return switch (type) {
            case POSTGRESQL -> new PostgresLedgerDialect(table);
            case MARIADB -> new MariaDbLedgerDialect(table);
            case H2 -> new H2LedgerDialect(table);
        };
    }

    /** The database's current time as an SQL expression of the columns' type, in UTC. */
    protected abstract String now();

    /** {@link #now()} plus one bound {@code BIGINT} parameter of microseconds. */
    protected abstract String nowPlusMicros();

    /** A lease as the microseconds {@link #nowPlusMicros()} binds. */
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
     *     concurrent transaction committed it after the statement's snapshot was taken
     */
    public abstract Map<String, ProcessedMessage> claim(
            Connection connection,
            String consumer,
            List<ClaimRequest> requests,
            long claimToken,
            @Nullable Duration lease)
            throws SQLException;

    /**
     * The rows pruning deletes, with the cutoff bound twice: completed rows processed before it,
     * and in-progress rows whose lease ended before it (claims released after a failure and never
     * taken again, e.g. dead-lettered messages). Live claims and rows held for reconciliation stay.
     * The cutoff comes from the pruner's clock (retention is measured in days, so clock skew only
     * shifts it by the skew); a claim is additionally pruned only once its lease has ended by the
     * database's clock, so no pruner clock, however far ahead, deletes a live claim.
     */
    protected String prunable() {
        return "((status = 'COMPLETED' AND processed_at < ?) OR (status = 'IN_PROGRESS' AND lease_until < ? AND lease_until <= "
                + now() + "))";
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
        String sql = "UPDATE " + table + " SET status = 'COMPLETED', processed_at = " + now()
                + ", lease_until = NULL, last_error = NULL"
                + " WHERE consumer = ? AND claim_token = ? AND status = 'IN_PROGRESS' AND "
                + messageIdIn(messageIds.size());
        try (PreparedStatement statement = connection.prepareStatement(sql)) {
            statement.setString(1, consumer);
            statement.setLong(2, claimToken);
            bindMessageIds(statement, 3, messageIds);
            return statement.executeUpdate();
        }
    }

    public int release(
            Connection connection,
            String consumer,
            long claimToken,
            Collection<String> messageIds,
            @Nullable String error)
            throws SQLException {
        // Ending the lease at the database's now (rather than deleting the row) keeps the attempt
        // count and the last error for operators; the next claim, whose now is not earlier, takes
        // the row over.
        String sql = "UPDATE " + table + " SET lease_until = " + now() + ", last_error = ?"
                + " WHERE consumer = ? AND claim_token = ? AND status = 'IN_PROGRESS' AND "
                + messageIdIn(messageIds.size());
        try (PreparedStatement statement = connection.prepareStatement(sql)) {
            statement.setString(1, error);
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
        String sql = "UPDATE " + table + " SET status = 'RECONCILE', lease_until = NULL, last_error = ?"
                + " WHERE consumer = ? AND claim_token = ? AND status = 'IN_PROGRESS' AND message_id = ?";
        try (PreparedStatement statement = connection.prepareStatement(sql)) {
            statement.setString(1, reason);
            statement.setString(2, consumer);
            statement.setLong(3, claimToken);
            statement.setString(4, messageId);
            return statement.executeUpdate();
        }
    }

    public Map<String, ProcessedMessage> find(Connection connection, String consumer, Collection<String> messageIds)
            throws SQLException {
        String sql =
                "SELECT " + COLUMNS + " FROM " + table + " WHERE consumer = ? AND " + messageIdIn(messageIds.size());
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
