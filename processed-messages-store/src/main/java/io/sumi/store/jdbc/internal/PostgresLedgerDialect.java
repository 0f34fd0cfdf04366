package io.sumi.store.jdbc.internal;

import io.sumi.jdbc.internal.InstantBinding;
import io.sumi.jdbc.internal.SqlTemplate;
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
 * PostgreSQL: {@code INSERT ... ON CONFLICT DO UPDATE ... WHERE} claims. A single-id claim is
 * wrapped in a CTE that also returns the existing row when the conflict was not taken over, so a
 * failed claim costs no second read. A batch claim returns only the rows it claimed; the store
 * reads the rest with {@link #find} (see {@code SQL_STATEMENT_CLAIM_MANY_LEASE} for why).
 *
 * <p>Race: the outer {@code SELECT} of the single-id CTE reads the statement's snapshot. When
 * another transaction inserted the same key and committed after that snapshot was taken, {@code ON
 * CONFLICT} (which waits for and sees that row) does nothing, but the outer {@code SELECT} cannot
 * see it either, and the id comes back missing. The store reads such ids again in a new statement.
 */
final class PostgresLedgerDialect extends LedgerDialect {

    // The clock of every statement is statement_timestamp(): one value for the whole statement, and,
    // unlike now(), not the start of a long caller transaction that a transactional-mode claim runs
    // in. A lease is bound as microseconds added to it.

    /**
     * Claims one message with a lease, or returns its existing row. Parameters: consumer,
     * message id, claim token, lease in microseconds, fingerprint, consumer, message id.
     */
    private static final String SQL_STATEMENT_CLAIM_ONE_LEASE = """
            WITH claimed AS (
                INSERT INTO ${table} AS pm (consumer, message_id, status, claim_token, lease_until, attempts, fingerprint,
                                            first_seen_at, processed_at)
                VALUES (?, ?, 'IN_PROGRESS', ?, (statement_timestamp() + CAST(? AS BIGINT) * INTERVAL '1 microsecond'), 1, ?,
                        statement_timestamp(), NULL)
                ON CONFLICT (consumer, message_id) DO UPDATE
                   SET claim_token = EXCLUDED.claim_token, lease_until = EXCLUDED.lease_until, attempts = pm.attempts + 1
                 WHERE pm.status = 'IN_PROGRESS' AND pm.lease_until <= statement_timestamp()
                RETURNING pm.consumer, pm.message_id, pm.status, pm.claim_token, pm.lease_until, pm.attempts,
                          pm.fingerprint, pm.last_error, pm.first_seen_at, pm.processed_at)
            SELECT consumer, message_id, status, claim_token, lease_until, attempts, fingerprint, last_error,
                   first_seen_at, processed_at
              FROM claimed
            UNION ALL
            SELECT consumer, message_id, status, claim_token, lease_until, attempts, fingerprint, last_error,
                   first_seen_at, processed_at
              FROM ${table}
             WHERE consumer = ? AND message_id = ? AND NOT EXISTS (SELECT 1 FROM claimed)
            """;

    /**
     * Claims one message as {@code COMPLETED} (transactional mode), or returns its existing row.
     * Parameters: consumer, message id, claim token, fingerprint, consumer, message id.
     */
    private static final String SQL_STATEMENT_CLAIM_ONE_COMPLETED = """
            WITH claimed AS (
                INSERT INTO ${table} AS pm (consumer, message_id, status, claim_token, lease_until, attempts, fingerprint,
                                            first_seen_at, processed_at)
                VALUES (?, ?, 'COMPLETED', ?, NULL, 1, ?, statement_timestamp(), statement_timestamp())
                ON CONFLICT (consumer, message_id) DO UPDATE
                   SET status = 'COMPLETED', claim_token = EXCLUDED.claim_token, lease_until = NULL,
                       attempts = pm.attempts + 1, processed_at = EXCLUDED.processed_at
                 WHERE pm.status = 'IN_PROGRESS' AND pm.lease_until <= statement_timestamp()
                RETURNING pm.consumer, pm.message_id, pm.status, pm.claim_token, pm.lease_until, pm.attempts,
                          pm.fingerprint, pm.last_error, pm.first_seen_at, pm.processed_at)
            SELECT consumer, message_id, status, claim_token, lease_until, attempts, fingerprint, last_error,
                   first_seen_at, processed_at
              FROM claimed
            UNION ALL
            SELECT consumer, message_id, status, claim_token, lease_until, attempts, fingerprint, last_error,
                   first_seen_at, processed_at
              FROM ${table}
             WHERE consumer = ? AND message_id = ? AND NOT EXISTS (SELECT 1 FROM claimed)
            """;

    /**
     * Claims a batch with a lease, and returns only the rows it claimed (inserted or took over): the
     * store reads the others (duplicates, live leases) with {@link #find}, only when there are any.
     * Parameters: consumer, claim token, lease in microseconds, message ids (array), fingerprints
     * (array).
     *
     * <p>Why no read of the existing rows in the same statement (as the single-id claims do): such a
     * read is a join of the input with the ledger, and PostgreSQL caches a <em>generic</em> plan of a
     * prepared statement after five executions. On a table that was never analyzed (a new or
     * truncated ledger) that plan was a scan of the consumer's whole key range, cached while the
     * table was small and kept until the first {@code ANALYZE}: a batch of 100 new ids took 10 to 20
     * times longer, growing with the ledger (docs/benchmarks.md, "Cold tables"). This statement reads
     * the ledger only through {@code ON CONFLICT}'s arbiter index, one unique-key probe per id, so no
     * plan of it can scan a range. {@code ORDER BY}: concurrent batches lock their rows in one order,
     * so they cannot deadlock.
     */
    private static final String SQL_STATEMENT_CLAIM_MANY_LEASE = """
            ${durability_with}
            INSERT INTO ${table} AS pm (consumer, message_id, status, claim_token, lease_until, attempts, fingerprint,
                                        first_seen_at, processed_at)
            SELECT ?, i.message_id, 'IN_PROGRESS', ?, (statement_timestamp() + CAST(? AS BIGINT) * INTERVAL '1 microsecond'),
                   1, i.fingerprint, statement_timestamp(), NULL
              FROM unnest(?::varchar[], ?::varchar[]) AS i(message_id, fingerprint) ${durability_join}
             ORDER BY i.message_id
            ON CONFLICT (consumer, message_id) DO UPDATE
               SET claim_token = EXCLUDED.claim_token, lease_until = EXCLUDED.lease_until, attempts = pm.attempts + 1
             WHERE pm.status = 'IN_PROGRESS' AND pm.lease_until <= statement_timestamp()
            RETURNING pm.consumer, pm.message_id, pm.status, pm.claim_token, pm.lease_until, pm.attempts,
                      pm.fingerprint, pm.last_error, pm.first_seen_at, pm.processed_at
            """;

    /**
     * The slots of {@link #SQL_STATEMENT_CLAIM_MANY_LEASE} for a claim committed without waiting
     * for the WAL flush ({@code asynchronousClaimCommit}): the materialized CTE sets
     * {@code synchronous_commit = off} for the statement's own transaction ({@code set_config(...,
     * true)}: local, reset at its end; the connection's setting is not touched), read once by the
     * join so that it is evaluated before the rows are written. The statement still reads the
     * ledger only through {@code ON CONFLICT}. Empty for the synchronous claim.
     */
    private static final String SQL_FRAGMENT_ASYNCHRONOUS_COMMIT_WITH =
            "WITH durability AS MATERIALIZED (SELECT set_config('synchronous_commit', 'off', true) AS setting)";

    private static final String SQL_FRAGMENT_ASYNCHRONOUS_COMMIT_JOIN =
            "CROSS JOIN durability d WHERE d.setting IS NOT NULL";

    /**
     * {@link #SQL_STATEMENT_CLAIM_MANY_LEASE} for transactional mode: rows inserted or taken over as
     * {@code COMPLETED}. Parameters: consumer, claim token, message ids (array), fingerprints (array).
     */
    private static final String SQL_STATEMENT_CLAIM_MANY_COMPLETED = """
            INSERT INTO ${table} AS pm (consumer, message_id, status, claim_token, lease_until, attempts, fingerprint,
                                        first_seen_at, processed_at)
            SELECT ?, i.message_id, 'COMPLETED', ?, NULL, 1, i.fingerprint, statement_timestamp(), statement_timestamp()
              FROM unnest(?::varchar[], ?::varchar[]) AS i(message_id, fingerprint)
             ORDER BY i.message_id
            ON CONFLICT (consumer, message_id) DO UPDATE
               SET status = 'COMPLETED', claim_token = EXCLUDED.claim_token, lease_until = NULL,
                   attempts = pm.attempts + 1, processed_at = EXCLUDED.processed_at
             WHERE pm.status = 'IN_PROGRESS' AND pm.lease_until <= statement_timestamp()
            RETURNING pm.consumer, pm.message_id, pm.status, pm.claim_token, pm.lease_until, pm.attempts,
                      pm.fingerprint, pm.last_error, pm.first_seen_at, pm.processed_at
            """;

    /**
     * Reads the rows of a list of ids: one unique-key probe per id. Parameters: message ids (array),
     * consumer.
     *
     * <p>{@code OFFSET 0} keeps the lateral subquery from being merged into a join: merged, a generic
     * plan made on a never-analyzed table scans the consumer's whole key range and filters the ids
     * ({@code consumer = ? AND message_id = ANY(?)} does the same), which is what the batch claim
     * avoids. Kept apart, its only condition is the full primary key of one id.
     */
    private static final String SQL_STATEMENT_FIND_MANY = """
            SELECT t.consumer, t.message_id, t.status, t.claim_token, t.lease_until, t.attempts, t.fingerprint,
                   t.last_error, t.first_seen_at, t.processed_at
              FROM unnest(?::varchar[]) AS i(message_id)
             CROSS JOIN LATERAL (
                   SELECT * FROM ${table} p WHERE p.consumer = ? AND p.message_id = i.message_id OFFSET 0) t
            """;

    /**
     * SKIP LOCKED: instances pruning at the same time take disjoint rows instead of queueing.
     * Parameters: the cutoff (twice), the limit.
     */
    private static final String SQL_STATEMENT_DELETE_COMPLETED_BEFORE = """
            DELETE FROM ${table}
             WHERE (consumer, message_id) IN (
                   SELECT consumer, message_id FROM ${table} WHERE ${prunable} LIMIT ? FOR UPDATE SKIP LOCKED)
            """;

    /** One array parameter: one statement text for every batch size, and no 500-parameter statements. */
    private static final String SQL_CONDITION_MESSAGE_ID_IN = "message_id = ANY(?::varchar[])";

    /**
     * One id (every record listener's complete, release and renew): an equality on the whole primary
     * key, so a plan can look the row up by it. With the array form, the generic plan of a table
     * analyzed while empty (and not since: autovacuum off or not yet run) read the consumer's rows
     * through a bitmap AND of the partial lease index and the key's first column, once per record.
     * On such a table the planner may still pick the lease index (it holds only in-progress rows; the
     * two cost the same without statistics), so this narrows the trap rather than closing it: the
     * ledger needs autovacuum, as every PostgreSQL table does.
     */
    private static final String SQL_CONDITION_MESSAGE_ID_IS = "message_id = ?";

    // The statements with the table filled in (the probes benchmark reads them by these names).
    private final String claimOneLease;
    private final String claimOneCompleted;
    private final String claimManyLease;
    private final String claimManyCompleted;
    private final String findMany;
    private final String deleteCompleted;

    PostgresLedgerDialect(String table, boolean asynchronousClaimCommit) {
        super(table, InstantBinding.TIMESTAMP_WITH_TIME_ZONE, "statement_timestamp()");
        this.claimOneLease = SqlTemplate.fill(SQL_STATEMENT_CLAIM_ONE_LEASE, "table", table);
        this.claimOneCompleted = SqlTemplate.fill(SQL_STATEMENT_CLAIM_ONE_COMPLETED, "table", table);
        this.claimManyLease = SqlTemplate.fill(
                SQL_STATEMENT_CLAIM_MANY_LEASE,
                "table",
                table,
                "durability_with",
                asynchronousClaimCommit ? SQL_FRAGMENT_ASYNCHRONOUS_COMMIT_WITH : "",
                "durability_join",
                asynchronousClaimCommit ? SQL_FRAGMENT_ASYNCHRONOUS_COMMIT_JOIN : "");
        this.claimManyCompleted = SqlTemplate.fill(SQL_STATEMENT_CLAIM_MANY_COMPLETED, "table", table);
        this.findMany = SqlTemplate.fill(SQL_STATEMENT_FIND_MANY, "table", table);
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
            statement.setString(i++, consumer);
            statement.setLong(i++, claimToken);
            if (lease != null) {
                statement.setLong(i++, micros(lease));
            }
            statement.setArray(i++, idArray);
            statement.setArray(i, fingerprintArray);
            return readRows(statement);
        } finally {
            idArray.free();
            fingerprintArray.free();
        }
    }

    @Override
    public Map<String, ProcessedMessage> find(Connection connection, String consumer, Collection<String> messageIds)
            throws SQLException {
        Array idArray = connection.createArrayOf("varchar", messageIds.toArray(new String[0]));
        try (PreparedStatement statement = connection.prepareStatement(findMany)) {
            statement.setArray(1, idArray);
            statement.setString(2, consumer);
            return readRows(statement);
        } finally {
            idArray.free();
        }
    }

    @Override
    protected String deleteCompletedBefore() {
        return deleteCompleted;
    }

    @Override
    protected String messageIdIn(int count) {
        return count == 1 ? SQL_CONDITION_MESSAGE_ID_IS : SQL_CONDITION_MESSAGE_ID_IN;
    }

    @Override
    protected void bindMessageIds(PreparedStatement statement, int first, Collection<String> messageIds)
            throws SQLException {
        if (messageIds.size() == 1) {
            statement.setString(first, messageIds.iterator().next());
            return;
        }
        statement.setArray(
                first, statement.getConnection().createArrayOf("varchar", messageIds.toArray(new String[0])));
    }

    @Override
    protected String nowPlusMicros() {
        return "(statement_timestamp() + CAST(? AS BIGINT) * INTERVAL '1 microsecond')";
    }
}
