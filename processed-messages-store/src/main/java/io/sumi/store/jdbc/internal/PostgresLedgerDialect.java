package io.sumi.store.jdbc.internal;

import io.sumi.jdbc.internal.InstantBinding;
import io.sumi.store.ClaimRequest;
import io.sumi.store.ProcessedMessage;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * PostgreSQL: {@code INSERT ... ON CONFLICT DO UPDATE ... WHERE} claims, wrapped in a CTE that also
 * returns the existing row when the conflict was not taken over, so a failed claim costs no
 * second read.
 *
 * <p>Race: the outer {@code SELECT} of the CTE reads the statement's snapshot. When another
 * transaction inserted the same key and committed after that snapshot was taken, {@code ON
 * CONFLICT} (which waits for and sees that row) does nothing, but the outer {@code SELECT} cannot
 * see it either, and the id comes back missing. The store reads such ids again in a new statement.
 */
final class PostgresLedgerDialect extends LedgerDialect {

    /**
     * The statement's start: one value for the whole statement, and, unlike {@code now()}, not the
     * start of a long caller transaction that a transactional-mode claim runs in.
     */
    private static final String NOW = "statement_timestamp()";

    private final String claimOneLease;
    private final String claimOneCompleted;
    private final String claimManyLease;
    private final String claimManyCompleted;
    private final String deleteCompleted;

    PostgresLedgerDialect(String table) {
        super(table, InstantBinding.TIMESTAMP_WITH_TIME_ZONE);
        String leaseUntil = nowPlusMicros();
        String insert = "INSERT INTO " + table
                + " AS pm (consumer, message_id, status, claim_token, lease_until, attempts, fingerprint, first_seen_at, processed_at) ";
        String returning = " RETURNING " + prefixed("pm.");
        String leaseConflict = " ON CONFLICT (consumer, message_id) DO UPDATE"
                + " SET claim_token = EXCLUDED.claim_token, lease_until = EXCLUDED.lease_until, attempts = pm.attempts + 1"
                + " WHERE pm.status = 'IN_PROGRESS' AND pm.lease_until <= " + NOW;
        String completedConflict = " ON CONFLICT (consumer, message_id) DO UPDATE"
                + " SET status = 'COMPLETED', claim_token = EXCLUDED.claim_token, lease_until = NULL,"
                + " attempts = pm.attempts + 1, processed_at = EXCLUDED.processed_at"
                + " WHERE pm.status = 'IN_PROGRESS' AND pm.lease_until <= " + NOW;
        String oneExisting = " SELECT " + COLUMNS + " FROM claimed UNION ALL SELECT " + COLUMNS + " FROM " + table
                + " WHERE consumer = ? AND message_id = ? AND NOT EXISTS (SELECT 1 FROM claimed)";
        // Parameters, one row: consumer, message_id, claim_token, [lease in microseconds], fingerprint,
        // consumer, message_id.
        this.claimOneLease = "WITH claimed AS (" + insert
                + "VALUES (?, ?, 'IN_PROGRESS', ?, " + leaseUntil + ", 1, ?, " + NOW + ", NULL)" + leaseConflict
                + returning + ")"
                + oneExisting;
        this.claimOneCompleted = "WITH claimed AS (" + insert
                + "VALUES (?, ?, 'COMPLETED', ?, NULL, 1, ?, " + NOW + ", " + NOW + ")" + completedConflict + returning
                + ")"
                + oneExisting;
        String input =
                "WITH input AS (SELECT * FROM unnest(?::varchar[], ?::varchar[]) AS i(message_id, fingerprint)), ";
        // The existing rows are found by driving from the (small) input into the primary key:
        // an IN / NOT IN form let the planner scan every row of the consumer when the table had no
        // statistics yet (a new or truncated ledger), 18x slower for a batch of 100.
        String manyExisting =
                " SELECT " + COLUMNS + " FROM claimed UNION ALL SELECT " + prefixed("t.") + " FROM input i JOIN "
                        + table + " t ON t.consumer = ? AND t.message_id = i.message_id"
                        + " WHERE NOT EXISTS (SELECT 1 FROM claimed c WHERE c.message_id = i.message_id)";
        // ORDER BY: concurrent batches lock their rows in one order, so they cannot deadlock.
        this.claimManyLease = input + "claimed AS (" + insert
                + "SELECT ?, i.message_id, 'IN_PROGRESS', ?, " + leaseUntil + ", 1, i.fingerprint, " + NOW
                + ", NULL FROM input i ORDER BY i.message_id"
                + leaseConflict + returning + ")" + manyExisting;
        this.claimManyCompleted = input + "claimed AS (" + insert
                + "SELECT ?, i.message_id, 'COMPLETED', ?, NULL, 1, i.fingerprint, " + NOW + ", " + NOW
                + " FROM input i ORDER BY i.message_id"
                + completedConflict + returning + ")" + manyExisting;
        this.deleteCompleted =
                "DELETE FROM " + table + " WHERE (consumer, message_id) IN (SELECT consumer, message_id FROM " + table
                        + " WHERE " + prunable() + " LIMIT ? FOR UPDATE SKIP LOCKED)";
    }

    @Override
    protected String now() {
        return NOW;
    }

    @Override
    protected String nowPlusMicros() {
        return "(" + NOW + " + CAST(? AS BIGINT) * INTERVAL '1 microsecond')";
    }

    private static String prefixed(String prefix) {
        return prefix + COLUMNS.replace(", ", ", " + prefix);
    }

    @Override
    public Map<String, ProcessedMessage> claim(
            Connection connection,
            String consumer,
            List<ClaimRequest> requests,
            long claimToken,
            @Nullable Duration lease)
            throws SQLException {
        if (requests.size() == 1) {
            ClaimRequest request = requests.get(0);
            try (PreparedStatement statement =
                    connection.prepareStatement(lease != null ? claimOneLease : claimOneCompleted)) {
                int i = 1;
                statement.setString(i++, consumer);
                statement.setString(i++, request.messageId());
                statement.setLong(i++, claimToken);
                if (lease != null) {
                    statement.setLong(i++, micros(lease));
                }
                statement.setString(i++, request.fingerprint());
                statement.setString(i++, consumer);
                statement.setString(i, request.messageId());
                return readRows(statement);
            }
        }
        String[] ids = new String[requests.size()];
        String[] fingerprints = new String[requests.size()];
        for (int k = 0; k < ids.length; k++) {
            ids[k] = requests.get(k).messageId();
            fingerprints[k] = requests.get(k).fingerprint();
        }
        Array idArray = connection.createArrayOf("varchar", ids);
        Array fingerprintArray = connection.createArrayOf("varchar", fingerprints);
        try (PreparedStatement statement =
                connection.prepareStatement(lease != null ? claimManyLease : claimManyCompleted)) {
            int i = 1;
            statement.setArray(i++, idArray);
            statement.setArray(i++, fingerprintArray);
            statement.setString(i++, consumer);
            statement.setLong(i++, claimToken);
            if (lease != null) {
                statement.setLong(i++, micros(lease));
            }
            statement.setString(i, consumer);
            return readRows(statement);
        } finally {
            idArray.free();
            fingerprintArray.free();
        }
    }

    /** SKIP LOCKED: instances pruning at the same time take disjoint rows instead of queueing. */
    @Override
    protected String deleteCompletedBefore() {
        return deleteCompleted;
    }

    /** One array parameter: one statement text for every batch size, and no 500-parameter statements. */
    @Override
    protected String messageIdIn(int count) {
        return "message_id = ANY(?::varchar[])";
    }

    @Override
    protected void bindMessageIds(PreparedStatement statement, int first, Collection<String> messageIds)
            throws SQLException {
        statement.setArray(
                first, statement.getConnection().createArrayOf("varchar", messageIds.toArray(new String[0])));
    }
}
