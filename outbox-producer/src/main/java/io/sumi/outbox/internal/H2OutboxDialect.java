package io.sumi.outbox.internal;

import io.sumi.jdbc.internal.InstantBinding;

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

    private final String deleteDispatched;

    H2OutboxDialect(String table) {
        super(table, InstantBinding.TIMESTAMP_WITH_TIME_ZONE);
        this.deleteDispatched = "DELETE FROM " + table + " WHERE dispatched_at < ? FETCH FIRST ? ROWS ONLY";
    }

    @Override
    public Claim claim(Ordering ordering) {
        String sql = "SELECT " + COLUMNS + " FROM FINAL TABLE (MERGE INTO " + table + " o USING ("
                + candidates(ordering)
                + " FETCH FIRST ? ROWS ONLY) picked ON o.id = picked.id AND o.dispatched_at IS NULL AND o.parked_at IS NULL"
                + " AND (o.lease_until IS NULL OR o.lease_until <= " + databaseNow() + ")"
                + " WHEN MATCHED THEN UPDATE SET claim_token = ?, lease_until = " + databaseNowPlusMillis() + ")";
        return claimInOneStatement(sql, ordering);
    }

    /** The start of the claim's transaction (H2 keeps it for the whole transaction). */
    @Override
    protected String databaseNow() {
        return "CURRENT_TIMESTAMP";
    }

    @Override
    protected String databaseNowPlusMillis() {
        return "DATEADD(MILLISECOND, CAST(? AS BIGINT), CURRENT_TIMESTAMP)";
    }

    @Override
    protected String candidateOrder() {
        // Among pending rows (dispatched_at IS NULL) this is id order; spelled so, H2 reads it
        // from outbox_pending_idx (dispatched_at, id) instead of sorting every pending row.
        return "c.dispatched_at, c.id";
    }

    @Override
    protected String deleteDispatchedBefore() {
        return deleteDispatched;
    }
}
