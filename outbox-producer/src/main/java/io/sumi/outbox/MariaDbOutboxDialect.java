package io.sumi.outbox;

import io.sumi.jdbc.internal.InstantBinding;
import io.sumi.jdbc.internal.SqlTemplate;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import java.util.Collection;
import java.util.List;

/**
 * MariaDB 10.6+. MariaDB 10.11 has no {@code UPDATE ... RETURNING}, so the claim is one
 * {@code UPDATE} that writes a random claim token and the lease, committed at once, followed by a
 * plain read of the rows carrying that token (the lease keeps them ours meanwhile):
 *
 * <pre>
 * UPDATE outbox SET claim_token = ?, lease_until = UTC_TIMESTAMP(6) + lease
 *  WHERE dispatched_at IS NULL AND parked_at IS NULL AND (lease_until IS NULL OR lease_until &lt;= UTC_TIMESTAMP(6))
 *    AND id IN (SELECT id FROM (SELECT c.id ... ORDER BY c.id LIMIT ? FOR UPDATE SKIP LOCKED) picked)
 *  LIMIT ?
 * </pre>
 *
 * Why exactly this shape (each point measured on MariaDB 10.11):
 * <ul>
 *   <li>The picking {@code SELECT} sits in a derived table inside {@code IN}: MariaDB allows
 *   neither {@code LIMIT} directly in an {@code IN} subquery nor, otherwise, the target table in
 *   its own subquery. In this single-table form its {@code SKIP LOCKED} is honoured. (In the
 *   multi-table form {@code UPDATE outbox JOIN (...)}, and with an {@code ORDER BY} on the outer
 *   update, it is not: the claim then waits for other dispatchers' claims and for open appending
 *   transactions.)</li>
 *   <li>The outer conditions repeat the lease test: the outer update reads the newest committed
 *   version of each row, so a row another dispatcher leased in the meantime is not taken twice.</li>
 *   <li>The outer {@code LIMIT} stops the scan of pending rows once every picked row is found
 *   (without it, the outer update walks every pending row).</li>
 *   <li>The statement runs at READ COMMITTED ({@code SET TRANSACTION ISOLATION LEVEL READ
 *   COMMITTED} before it): at MariaDB's default REPEATABLE READ, InnoDB takes gap locks and the
 *   claim blocks, and is blocked by, transactions inserting outbox rows. At READ COMMITTED an
 *   uncommitted appended row is skipped without waiting.</li>
 *   <li>The ordered-topic test ({@code NOT EXISTS} an earlier undispatched row) is a non-locking
 *   read: a row another dispatcher has locked is still seen, so a later row of its aggregate is
 *   not taken.</li>
 * </ul>
 */
final class MariaDbOutboxDialect extends OutboxDialect {

    // The clock is UTC_TIMESTAMP(6), UTC like every time the outbox stores in DATETIME columns and
    // fixed for the whole statement; a lease is bound as milliseconds added to it.

    /**
     * Leases the picked rows (the shape is explained above); {@code ${candidates}} is
     * {@link #candidates}. Parameters: the claim token, the lease in milliseconds, those of the
     * candidates, the limit (twice).
     */
    private static final String SQL_STATEMENT_CLAIM = """
            UPDATE ${table}
               SET claim_token = ?, lease_until = TIMESTAMPADD(MICROSECOND, ? * 1000, UTC_TIMESTAMP(6))
             WHERE dispatched_at IS NULL AND parked_at IS NULL AND (lease_until IS NULL OR lease_until <= UTC_TIMESTAMP(6))
               AND id IN (SELECT id FROM (${candidates} LIMIT ? FOR UPDATE SKIP LOCKED) picked)
             LIMIT ?
            """;

    /** Reads what {@link #SQL_STATEMENT_CLAIM} leased. Parameters: the claim token. */
    private static final String SQL_STATEMENT_READ_CLAIMED = """
            SELECT id, aggregate_id, topic, payload, headers, created_at, available_at, dispatched_at, attempts,
                   last_error, parked_at, dispatch_outcome
              FROM ${table}
             WHERE claim_token = ? AND dispatched_at IS NULL
             ORDER BY id
            """;

    /**
     * MariaDB has no array type: the ids are ONE parameter all the same, a JSON array
     * ({@code [1,2,3]}) that {@code JSON_TABLE} turns into rows. One statement text for every batch
     * size. The multi-table {@code UPDATE ... JOIN} form lets the optimizer drive from the ids into
     * the primary key ({@code eq_ref}); {@code WHERE id IN (SELECT ... FROM JSON_TABLE(...))} in a
     * single-table {@code UPDATE} is run by MariaDB 10.11 as a dependent subquery per row of the
     * table (measured: a scan of every row). {@code FORCE INDEX (PRIMARY)} makes it do so: without
     * it, with a backlog, the optimizer chose a {@code ref} on {@code outbox_pending_idx}
     * ({@code dispatched_at IS NULL}) and locked every pending row it scanned (a mark of 8 rows held
     * 902 row locks), so the marks of pipelined batches and the claims deadlocked each other: 3,794
     * deadlocks in one benchmark run, each a statement retried. Parameters: the ids (JSON),
     * dispatched at, outcome, claim token.
     */
    private static final String SQL_STATEMENT_MARK_DISPATCHED = """
            UPDATE ${table} o FORCE INDEX (PRIMARY)
              JOIN JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT PATH '$')) marked ON o.id = marked.id
               SET o.dispatched_at = ?, o.dispatch_outcome = ?, o.lease_until = NULL
             WHERE o.claim_token = ? AND o.dispatched_at IS NULL
            """;

    /** Parameters: the cutoff, the limit. */
    private static final String SQL_STATEMENT_DELETE_DISPATCHED_BEFORE = """
            DELETE FROM ${table} WHERE dispatched_at < ? ORDER BY dispatched_at LIMIT ?
            """;

    /** Applies to the next transaction only; the session's level is left alone. */
    private static final String SQL_STATEMENT_READ_COMMITTED = "SET TRANSACTION ISOLATION LEVEL READ COMMITTED";

    private final String claim;
    private final String readClaimed;
    private final String deleteDispatched;
    private final String markDispatched;

    MariaDbOutboxDialect(String table) {
        super(table, InstantBinding.UTC_DATETIME, "UTC_TIMESTAMP(6)", "c.id");
        this.claim = SqlTemplate.fill(SQL_STATEMENT_CLAIM, "table", table);
        this.readClaimed = SqlTemplate.fill(SQL_STATEMENT_READ_CLAIMED, "table", table);
        this.deleteDispatched = SqlTemplate.fill(SQL_STATEMENT_DELETE_DISPATCHED_BEFORE, "table", table);
        this.markDispatched = SqlTemplate.fill(SQL_STATEMENT_MARK_DISPATCHED, "table", table);
    }

    @Override
    public int markDispatched(
            Connection connection, long claimToken, Collection<Long> ids, Instant at, DispatchOutcome outcome)
            throws SQLException {
        if (ids.isEmpty()) {
            return 0;
        }
        StringBuilder json = new StringBuilder(ids.size() * 8).append('[');
        for (Long id : ids) {
            if (json.length() > 1) {
                json.append(',');
            }
            json.append(id.longValue());
        }
        try (PreparedStatement statement = connection.prepareStatement(markDispatched)) {
            statement.setString(1, json.append(']').toString());
            setInstant(statement, 2, at);
            statement.setString(3, outcome.name());
            statement.setLong(4, claimToken);
            return statement.executeUpdate();
        }
    }

    @Override
    public Claim claim(Ordering ordering) {
        String update = SqlTemplate.fill(claim, "candidates", candidates(ordering));
        return (connection, claimToken, now, lease, limit) -> {
            readCommitted(connection);
            int claimed;
            try (PreparedStatement statement = connection.prepareStatement(update)) {
                statement.setLong(1, claimToken);
                statement.setLong(2, lease.toMillis());
                int index = bindCandidates(statement, 3, ordering, now);
                statement.setInt(index++, limit);
                statement.setInt(index, limit);
                claimed = statement.executeUpdate();
            }
            if (claimed == 0) {
                return List.of();
            }
            try (PreparedStatement statement = connection.prepareStatement(readClaimed)) {
                statement.setLong(1, claimToken);
                return readRows(statement);
            }
        };
    }

    @Override
    protected String deleteDispatchedBefore() {
        return deleteDispatched;
    }

    @Override
    public void readCommitted(Connection connection) throws SQLException {
        try (Statement statement = connection.createStatement()) {
            statement.execute(SQL_STATEMENT_READ_COMMITTED);
        }
    }
}
