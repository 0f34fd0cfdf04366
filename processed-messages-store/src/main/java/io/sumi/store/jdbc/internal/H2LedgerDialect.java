package io.sumi.store.jdbc.internal;

import io.sumi.jdbc.internal.InstantBinding;
import io.sumi.store.ClaimRequest;
import io.sumi.store.ProcessedMessage;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * H2 2.x, for tests and local development. H2 has no conditional upsert that returns the existing
 * row, so a claim is a take-over {@code UPDATE}, an {@code INSERT} whose duplicate-key error
 * (SQLSTATE 23505, which does not abort an H2 transaction) means "someone has it", and one
 * {@code SELECT} for the whole batch. The outcome is still decided by the row's claim token.
 */
final class H2LedgerDialect extends LedgerDialect {

    private static final String NOW = "CURRENT_TIMESTAMP";

    private static final String UNIQUE_VIOLATION = "23505";

    private final String takeOverLease;
    private final String takeOverCompleted;
    private final String insertLease;
    private final String insertCompleted;
    private final String deleteCompleted;

    H2LedgerDialect(String table) {
        super(table, InstantBinding.TIMESTAMP_WITH_TIME_ZONE);
        String expired = " WHERE consumer = ? AND message_id = ? AND status = 'IN_PROGRESS' AND lease_until <= " + NOW;
        // Parameters: claim_token, [lease in microseconds], consumer, message_id.
        this.takeOverLease = "UPDATE " + table + " SET claim_token = ?, lease_until = " + nowPlusMicros()
                + ", attempts = attempts + 1" + expired;
        this.takeOverCompleted = "UPDATE " + table + " SET claim_token = ?, processed_at = " + NOW
                + ", status = 'COMPLETED', lease_until = NULL, attempts = attempts + 1" + expired;
        // Parameters: consumer, message_id, claim_token, [lease in microseconds], fingerprint.
        this.insertLease = "INSERT INTO " + table + " (" + COLUMNS + ") VALUES (?, ?, 'IN_PROGRESS', ?, "
                + nowPlusMicros() + ", 1, ?, NULL, " + NOW + ", NULL)";
        this.insertCompleted = "INSERT INTO " + table + " (" + COLUMNS
                + ") VALUES (?, ?, 'COMPLETED', ?, NULL, 1, ?, NULL, " + NOW + ", " + NOW + ")";
        this.deleteCompleted = "DELETE FROM " + table + " WHERE " + prunable() + " FETCH FIRST ? ROWS ONLY";
    }

    @Override
    public Map<String, ProcessedMessage> claim(
            Connection connection,
            String consumer,
            List<ClaimRequest> requests,
            long claimToken,
            @Nullable Duration lease)
            throws SQLException {
        long micros = lease != null ? micros(lease) : 0;
        for (ClaimRequest request : requests) {
            int taken;
            try (PreparedStatement statement =
                    connection.prepareStatement(lease != null ? takeOverLease : takeOverCompleted)) {
                int i = 1;
                statement.setLong(i++, claimToken);
                if (lease != null) {
                    statement.setLong(i++, micros);
                }
                statement.setString(i++, consumer);
                statement.setString(i, request.messageId());
                taken = statement.executeUpdate();
            }
            if (taken == 0) {
                try (PreparedStatement statement =
                        connection.prepareStatement(lease != null ? insertLease : insertCompleted)) {
                    int i = 1;
                    statement.setString(i++, consumer);
                    statement.setString(i++, request.messageId());
                    statement.setLong(i++, claimToken);
                    if (lease != null) {
                        statement.setLong(i++, micros);
                    }
                    statement.setString(i, request.fingerprint());
                    statement.executeUpdate();
                } catch (SQLException ex) {
                    if (!UNIQUE_VIOLATION.equals(ex.getSQLState())) {
                        throw ex;
                    }
                }
            }
        }
        return find(
                connection,
                consumer,
                requests.stream().map(ClaimRequest::messageId).toList());
    }

    @Override
    protected String now() {
        return NOW;
    }

    @Override
    protected String nowPlusMicros() {
        return "DATEADD(MICROSECOND, CAST(? AS BIGINT), " + NOW + ")";
    }

    @Override
    protected String deleteCompletedBefore() {
        return deleteCompleted;
    }
}
