package io.sumi.store.jdbc.internal;

import io.sumi.jdbc.internal.InstantBinding;
import io.sumi.jdbc.internal.SqlTemplate;
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

    // The clock is CURRENT_TIMESTAMP; a lease is bound as microseconds added to it.

    /** Takes over an expired lease. Parameters: claim token, lease in microseconds, consumer, message id. */
    private static final String SQL_STATEMENT_TAKE_OVER_LEASE = """
            UPDATE ${table}
               SET claim_token = ?, lease_until = DATEADD(MICROSECOND, CAST(? AS BIGINT), CURRENT_TIMESTAMP),
                   attempts = attempts + 1
             WHERE consumer = ? AND message_id = ? AND status = 'IN_PROGRESS' AND lease_until <= CURRENT_TIMESTAMP
            """;

    /** Takes over an expired lease as {@code COMPLETED}. Parameters: claim token, consumer, message id. */
    private static final String SQL_STATEMENT_TAKE_OVER_COMPLETED = """
            UPDATE ${table}
               SET claim_token = ?, processed_at = CURRENT_TIMESTAMP, status = 'COMPLETED', lease_until = NULL,
                   attempts = attempts + 1
             WHERE consumer = ? AND message_id = ? AND status = 'IN_PROGRESS' AND lease_until <= CURRENT_TIMESTAMP
            """;

    /** Parameters: consumer, message id, claim token, lease in microseconds, fingerprint. */
    private static final String SQL_STATEMENT_INSERT_LEASE = """
            INSERT INTO ${table} (consumer, message_id, status, claim_token, lease_until, attempts, fingerprint, last_error,
                                  first_seen_at, processed_at)
            VALUES (?, ?, 'IN_PROGRESS', ?, DATEADD(MICROSECOND, CAST(? AS BIGINT), CURRENT_TIMESTAMP), 1, ?, NULL,
                    CURRENT_TIMESTAMP, NULL)
            """;

    /** Parameters: consumer, message id, claim token, fingerprint. */
    private static final String SQL_STATEMENT_INSERT_COMPLETED = """
            INSERT INTO ${table} (consumer, message_id, status, claim_token, lease_until, attempts, fingerprint, last_error,
                                  first_seen_at, processed_at)
            VALUES (?, ?, 'COMPLETED', ?, NULL, 1, ?, NULL, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)
            """;

    /** Parameters: the cutoff (twice), the limit. */
    private static final String SQL_STATEMENT_DELETE_COMPLETED_BEFORE = """
            DELETE FROM ${table} WHERE ${prunable} FETCH FIRST ? ROWS ONLY
            """;

    private static final String UNIQUE_VIOLATION = "23505";

    private final String takeOverLease;
    private final String takeOverCompleted;
    private final String insertLease;
    private final String insertCompleted;
    private final String deleteCompleted;

    H2LedgerDialect(String table) {
        super(table, InstantBinding.TIMESTAMP_WITH_TIME_ZONE, "CURRENT_TIMESTAMP");
        this.takeOverLease = SqlTemplate.fill(SQL_STATEMENT_TAKE_OVER_LEASE, "table", table);
        this.takeOverCompleted = SqlTemplate.fill(SQL_STATEMENT_TAKE_OVER_COMPLETED, "table", table);
        this.insertLease = SqlTemplate.fill(SQL_STATEMENT_INSERT_LEASE, "table", table);
        this.insertCompleted = SqlTemplate.fill(SQL_STATEMENT_INSERT_COMPLETED, "table", table);
        this.deleteCompleted =
                SqlTemplate.fill(SQL_STATEMENT_DELETE_COMPLETED_BEFORE, "table", table, "prunable", prunable());
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
    protected String deleteCompletedBefore() {
        return deleteCompleted;
    }

    @Override
    protected String nowPlusMicros() {
        return "DATEADD(MICROSECOND, CAST(? AS BIGINT), CURRENT_TIMESTAMP)";
    }
}
