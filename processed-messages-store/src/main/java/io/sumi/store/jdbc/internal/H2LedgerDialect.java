package io.sumi.store.jdbc.internal;

import io.sumi.store.ClaimRequest;
import io.sumi.store.ProcessedMessage;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * H2 2.x, for tests and local development. H2 has no conditional upsert that returns the existing
 * row, so a claim is a take-over {@code UPDATE}, an {@code INSERT} whose duplicate-key error
 * (SQLSTATE 23505, which does not abort an H2 transaction) means "someone has it", and one
 * {@code SELECT} for the whole batch. The outcome is still decided by the row's claim token.
 */
public final class H2LedgerDialect extends LedgerDialect {

    private static final String UNIQUE_VIOLATION = "23505";

    private final String takeOverLease;
    private final String takeOverCompleted;
    private final String insert;
    private final String deleteCompleted;

    public H2LedgerDialect(String table) {
        super(table);
        String expired = " WHERE consumer = ? AND message_id = ? AND status = 'IN_PROGRESS' AND lease_until <= ?";
        this.takeOverLease = "UPDATE " + table + " SET claim_token = ?, lease_until = ?, attempts = attempts + 1" + expired;
        this.takeOverCompleted = "UPDATE " + table + " SET claim_token = ?, processed_at = ?, status = 'COMPLETED', lease_until = NULL,"
                + " attempts = attempts + 1" + expired;
        this.insert = "INSERT INTO " + table + " (" + COLUMNS + ") VALUES (?, ?, ?, ?, ?, 1, ?, NULL, ?, ?)";
        this.deleteCompleted = "DELETE FROM " + table + " WHERE " + PRUNABLE + " FETCH FIRST ? ROWS ONLY";
    }

    @Override
    public Map<String, ProcessedMessage> claim(Connection connection, String consumer, List<ClaimRequest> requests,
            long claimToken, Instant now, @Nullable Instant leaseUntil) throws SQLException {
        boolean lease = leaseUntil != null;
        for (ClaimRequest request : requests) {
            int taken;
            try (PreparedStatement statement = connection.prepareStatement(lease ? takeOverLease : takeOverCompleted)) {
                statement.setLong(1, claimToken);
                setInstant(statement, 2, lease ? leaseUntil : now);
                statement.setString(3, consumer);
                statement.setString(4, request.messageId());
                setInstant(statement, 5, now);
                taken = statement.executeUpdate();
            }
            if (taken == 0) {
                try (PreparedStatement statement = connection.prepareStatement(insert)) {
                    statement.setString(1, consumer);
                    statement.setString(2, request.messageId());
                    statement.setString(3, lease ? "IN_PROGRESS" : "COMPLETED");
                    statement.setLong(4, claimToken);
                    setInstant(statement, 5, leaseUntil);
                    statement.setString(6, request.fingerprint());
                    setInstant(statement, 7, now);
                    setInstant(statement, 8, lease ? null : now);
                    statement.executeUpdate();
                }
                catch (SQLException ex) {
                    if (!UNIQUE_VIOLATION.equals(ex.getSQLState())) {
                        throw ex;
                    }
                }
            }
        }
        return find(connection, consumer, requests.stream().map(ClaimRequest::messageId).toList());
    }

    @Override
    public int deleteCompletedBefore(Connection connection, Instant cutoff, int limit) throws SQLException {
        try (PreparedStatement statement = connection.prepareStatement(deleteCompleted)) {
            setInstant(statement, 1, cutoff);
            setInstant(statement, 2, cutoff);
            statement.setInt(3, limit);
            return statement.executeUpdate();
        }
    }
}
