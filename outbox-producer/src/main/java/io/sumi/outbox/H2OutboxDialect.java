package io.sumi.outbox;

import io.sumi.jdbc.internal.InstantBinding;
import io.sumi.jdbc.internal.SqlTemplate;

/**
 * H2 2.x, for tests and local development: {@code SELECT ... FROM FINAL TABLE (MERGE INTO outbox
 * USING (<candidates>) ON <same row, still unleased> WHEN MATCHED THEN UPDATE SET <lease>)} picks,
 * leases and returns the rows in one statement.
 *
 * <p>H2 differs from the others (measured on H2 2.4): {@code FOR UPDATE SKIP LOCKED} in the
 * candidates applies the limit before skipping (a second claim then gets nothing) and makes the
 * statement ten times slower, and {@code UPDATE ... WHERE id IN (<candidates>)} walks every
 * pending row. So the candidates are read without locks, and the {@code ON} condition repeats the
 * lease test: a concurrent claim of the same rows waits for the first one's commit, re-evaluates
 * the condition on the newest row versions (H2 does), and takes nothing. Safe, but concurrent
 * dispatchers on H2 mostly take turns.
 */
final class H2OutboxDialect extends OutboxDialect {

    // The clock is CURRENT_TIMESTAMP, the start of the claim's transaction (H2 keeps it for the
    // whole transaction); a lease is bound as milliseconds added to it.

    /**
     * Picks, leases and returns the rows; {@code ${candidates}} is {@link #candidates}. Parameters:
     * those of the candidates, the limit, the claim token, the lease in milliseconds.
     */
    private static final String SQL_STATEMENT_CLAIM = """
            SELECT id, aggregate_id, topic, payload, headers, created_at, available_at, dispatched_at, attempts,
                   last_error, parked_at, dispatch_outcome
              FROM FINAL TABLE (
                   MERGE INTO ${table} o
                   USING (${candidates} FETCH FIRST ? ROWS ONLY) picked
                      ON o.id = picked.id AND o.dispatched_at IS NULL AND o.parked_at IS NULL
                         AND (o.lease_until IS NULL OR o.lease_until <= CURRENT_TIMESTAMP)
                   WHEN MATCHED THEN UPDATE
                        SET claim_token = ?, lease_until = DATEADD(MILLISECOND, CAST(? AS BIGINT), CURRENT_TIMESTAMP))
            """;

    /** Parameters: the cutoff, the limit. */
    private static final String SQL_STATEMENT_DELETE_DISPATCHED_BEFORE = """
            DELETE FROM ${table} WHERE dispatched_at < ? FETCH FIRST ? ROWS ONLY
            """;

    /**
     * Among pending rows (dispatched_at IS NULL) this is id order; spelled so, H2 reads it from
     * outbox_pending_idx (dispatched_at, id) instead of sorting every pending row.
     */
    private static final String SQL_CANDIDATE_ORDER = "c.dispatched_at, c.id";

    private final String claim;
    private final String deleteDispatched;

    H2OutboxDialect(String table) {
        super(table, InstantBinding.TIMESTAMP_WITH_TIME_ZONE, "CURRENT_TIMESTAMP", SQL_CANDIDATE_ORDER);
        this.claim = SqlTemplate.fill(SQL_STATEMENT_CLAIM, "table", table);
        this.deleteDispatched = SqlTemplate.fill(SQL_STATEMENT_DELETE_DISPATCHED_BEFORE, "table", table);
    }

    @Override
    public Claim claim(Ordering ordering) {
        return claimInOneStatement(SqlTemplate.fill(claim, "candidates", candidates(ordering)), ordering);
    }

    @Override
    protected String deleteDispatchedBefore() {
        return deleteDispatched;
    }
}
