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

    private static final String NOW = "UTC_TIMESTAMP(6)";

    private static final String TAKE_OVER_IF_EXPIRED = "claim_token = IF(status = 'IN_PROGRESS' AND lease_until <= "
            + NOW + ", VALUES(claim_token), claim_token), "
            + "attempts = IF(claim_token = VALUES(claim_token), attempts + 1, attempts), ";

    private final String deleteCompleted;

    MariaDbLedgerDialect(String table) {
        super(table, InstantBinding.UTC_DATETIME);
        this.deleteCompleted = "DELETE FROM " + table + " WHERE " + prunable() + " LIMIT ?";
    }

    @Override
    protected String now() {
        return NOW;
    }

    @Override
    protected String nowPlusMicros() {
        return "(" + NOW + " + INTERVAL ? MICROSECOND)";
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
        StringBuilder sql = new StringBuilder("INSERT INTO ")
                .append(table)
                .append(
                        " (consumer, message_id, status, claim_token, lease_until, attempts, fingerprint, first_seen_at, processed_at) VALUES ");
        String row = lease
                ? "(?, ?, 'IN_PROGRESS', ?, " + nowPlusMicros() + ", 1, ?, " + NOW + ", NULL)"
                : "(?, ?, 'COMPLETED', ?, NULL, 1, ?, " + NOW + ", " + NOW + ")";
        for (int k = 0; k < requests.size(); k++) {
            sql.append(k == 0 ? "" : ", ").append(row);
        }
        sql.append(" ON DUPLICATE KEY UPDATE ").append(TAKE_OVER_IF_EXPIRED);
        if (lease) {
            sql.append("lease_until = IF(claim_token = VALUES(claim_token), VALUES(lease_until), lease_until)");
        } else {
            sql.append("status = IF(claim_token = VALUES(claim_token), 'COMPLETED', status), ")
                    .append(
                            "processed_at = IF(claim_token = VALUES(claim_token), VALUES(processed_at), processed_at), ")
                    .append("lease_until = IF(claim_token = VALUES(claim_token), NULL, lease_until)");
        }
        sql.append(" RETURNING ").append(COLUMNS);
        try (PreparedStatement statement = connection.prepareStatement(sql.toString())) {
            int i = 1;
            long micros = lease ? micros(leaseDuration) : 0;
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
}
