package io.sumi.store.jdbc.internal;

import io.sumi.jdbc.internal.InstantBinding;
import io.sumi.jdbc.internal.SqlTemplate;
import io.sumi.store.ClaimRequest;
import io.sumi.store.ProcessedMessage;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * MariaDB 10.5+: {@code INSERT ... ON DUPLICATE KEY UPDATE ... RETURNING}. The update writes the
 * caller's claim token only when the existing row may be taken over, and the later assignments
 * test for that token (MariaDB applies assignments left to right, each seeing the ones before),
 * so the returned row tells by its token whether this statement claimed it.
 *
 * <p>Times are UTC in {@code DATETIME(6)} columns: the database's clock is
 * {@code UTC_TIMESTAMP(6)} (not {@code NOW(6)}, which follows the session's time zone), and the
 * pruning cutoff is bound and rows are read as UTC {@code LocalDateTime}s, so neither the JVM's nor
 * the session's time zone shifts them.
 */
final class MariaDbLedgerDialect extends LedgerDialect {

    // The clock is UTC_TIMESTAMP(6); a lease is bound as microseconds added to it. On a duplicate
    // key, claim_token is assigned first and takes the caller's token only when the row may be taken
    // over; every later assignment tests for that token.

    /**
     * Claims a batch with a lease; {@code ${rows}} is {@link #SQL_ROW_LEASE} once per message.
     * Parameters, per row: consumer, message id, claim token, lease in microseconds, fingerprint.
     */
    private static final String SQL_STATEMENT_CLAIM_LEASE = """
            INSERT INTO ${table} (consumer, message_id, status, claim_token, lease_until, attempts, fingerprint,
                                  first_seen_at, processed_at)
            VALUES ${rows}
            ON DUPLICATE KEY UPDATE
               claim_token = IF(status = 'IN_PROGRESS' AND lease_until <= UTC_TIMESTAMP(6), VALUES(claim_token), claim_token),
               attempts = IF(claim_token = VALUES(claim_token), attempts + 1, attempts),
               lease_until = IF(claim_token = VALUES(claim_token), VALUES(lease_until), lease_until)
            RETURNING consumer, message_id, status, claim_token, lease_until, attempts, fingerprint, last_error,
                      first_seen_at, processed_at
            """;

    private static final String SQL_ROW_LEASE =
            "(?, ?, 'IN_PROGRESS', ?, (UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND), 1, ?, UTC_TIMESTAMP(6), NULL)";

    /**
     * Claims a batch as {@code COMPLETED}; {@code ${rows}} is {@link #SQL_ROW_COMPLETED} once per
     * message. Parameters, per row: consumer, message id, claim token, fingerprint.
     */
    private static final String SQL_STATEMENT_CLAIM_COMPLETED = """
            INSERT INTO ${table} (consumer, message_id, status, claim_token, lease_until, attempts, fingerprint,
                                  first_seen_at, processed_at)
            VALUES ${rows}
            ON DUPLICATE KEY UPDATE
               claim_token = IF(status = 'IN_PROGRESS' AND lease_until <= UTC_TIMESTAMP(6), VALUES(claim_token), claim_token),
               attempts = IF(claim_token = VALUES(claim_token), attempts + 1, attempts),
               status = IF(claim_token = VALUES(claim_token), 'COMPLETED', status),
               processed_at = IF(claim_token = VALUES(claim_token), VALUES(processed_at), processed_at),
               lease_until = IF(claim_token = VALUES(claim_token), NULL, lease_until)
            RETURNING consumer, message_id, status, claim_token, lease_until, attempts, fingerprint, last_error,
                      first_seen_at, processed_at
            """;

    private static final String SQL_ROW_COMPLETED =
            "(?, ?, 'COMPLETED', ?, NULL, 1, ?, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))";

    /** Parameters: the cutoff (twice), the limit. */
    private static final String SQL_STATEMENT_DELETE_COMPLETED_BEFORE = """
            DELETE FROM ${table} WHERE ${prunable} LIMIT ?
            """;

    private final String claimLease;
    private final String claimCompleted;
    private final String deleteCompleted;

    MariaDbLedgerDialect(String table) {
        super(table, InstantBinding.UTC_DATETIME, "UTC_TIMESTAMP(6)");
        this.claimLease = SqlTemplate.fill(SQL_STATEMENT_CLAIM_LEASE, "table", table);
        this.claimCompleted = SqlTemplate.fill(SQL_STATEMENT_CLAIM_COMPLETED, "table", table);
        this.deleteCompleted =
                SqlTemplate.fill(SQL_STATEMENT_DELETE_COMPLETED_BEFORE, "table", table, "prunable", prunable());
    }

    @Override
    public Map<String, ProcessedMessage> claim(
            Connection connection,
            String consumer,
            List<ClaimRequest> requests,
            long claimToken,
            @Nullable Duration leaseDuration)
            throws SQLException {
        boolean lease = leaseDuration != null;
        String rows =
                String.join(", ", Collections.nCopies(requests.size(), lease ? SQL_ROW_LEASE : SQL_ROW_COMPLETED));
        String sql = SqlTemplate.fill(lease ? claimLease : claimCompleted, "rows", rows);
        try (PreparedStatement statement = connection.prepareStatement(sql)) {
            int i = 1;
            long micros = leaseDuration != null ? micros(leaseDuration) : 0;
            for (ClaimRequest request : requests) {
                statement.setString(i++, consumer);
                statement.setString(i++, request.messageId());
                statement.setLong(i++, claimToken);
                if (lease) {
                    statement.setLong(i++, micros);
                }
                statement.setString(i++, request.fingerprint());
            }
            return readRows(statement);
        }
    }

    @Override
    protected String deleteCompletedBefore() {
        return deleteCompleted;
    }

    @Override
    protected String nowPlusMicros() {
        return "(UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND)";
    }
}
