package io.sumi.outbox.internal;

import io.sumi.jdbc.internal.InstantBinding;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
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

    private final String readClaimed;
    private final String deleteDispatched;

    MariaDbOutboxDialect(String table) {
        super(table, InstantBinding.UTC_DATETIME);
        this.readClaimed =
                "SELECT " + COLUMNS + " FROM " + table + " WHERE claim_token = ? AND dispatched_at IS NULL ORDER BY id";
        this.deleteDispatched = "DELETE FROM " + table + " WHERE dispatched_at < ? ORDER BY dispatched_at LIMIT ?";
    }

    @Override
    public Claim claim(Ordering ordering) {
        String update = "UPDATE " + table + " SET claim_token = ?, lease_until = " + databaseNowPlusMillis()
                + " WHERE dispatched_at IS NULL AND parked_at IS NULL AND (lease_until IS NULL OR lease_until <= "
                + databaseNow() + ")"
                + " AND id IN (SELECT id FROM (" + candidates(ordering) + " LIMIT ? FOR UPDATE SKIP LOCKED) picked)"
                + " LIMIT ?";
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

    /** UTC, like every time the outbox stores in DATETIME columns; fixed for the whole statement. */
    @Override
    protected String databaseNow() {
        return "UTC_TIMESTAMP(6)";
    }

    @Override
    protected String databaseNowPlusMillis() {
        return "TIMESTAMPADD(MICROSECOND, ? * 1000, UTC_TIMESTAMP(6))";
    }

    @Override
    protected String deleteDispatchedBefore() {
        return deleteDispatched;
    }

    @Override
    public void readCommitted(Connection connection) throws SQLException {
        // Applies to the next transaction only; the session's level is left alone.
        try (Statement statement = connection.createStatement()) {
            statement.execute("SET TRANSACTION ISOLATION LEVEL READ COMMITTED");
        }
    }
}
