package io.sumi.outbox.internal;

import io.sumi.jdbc.internal.InstantBinding;
import java.sql.Connection;
import java.sql.SQLException;

/**
 * PostgreSQL: the claim is {@code WITH picked AS MATERIALIZED (SELECT ... FOR UPDATE SKIP LOCKED)
 * UPDATE ... FROM picked RETURNING ...}: one statement picks, leases and returns the rows.
 *
 * <p>Race: two dispatchers run the claim at once. The second skips the rows the first has locked;
 * a row the first has already leased and committed is re-checked by {@code FOR UPDATE} on its
 * newest version (READ COMMITTED re-evaluates the condition), where its live lease excludes it.
 * Rows inserted by transactions that have not committed yet are invisible and never block.
 */
final class PostgresOutboxDialect extends OutboxDialect {

    private final String deleteDispatched;

    PostgresOutboxDialect(String table) {
        super(table, InstantBinding.TIMESTAMP_WITH_TIME_ZONE);
        // SKIP LOCKED: instances pruning at the same time take disjoint rows instead of queueing.
        this.deleteDispatched = "DELETE FROM " + table + " WHERE id IN (SELECT id FROM " + table
                + " WHERE dispatched_at < ? ORDER BY dispatched_at LIMIT ? FOR UPDATE SKIP LOCKED)";
    }

    @Override
    public Claim claim(Ordering ordering) {
        String returning = "o." + COLUMNS.replace(", ", ", o.");
        String sql = "WITH picked AS MATERIALIZED (" + candidates(ordering) + " LIMIT ? FOR UPDATE SKIP LOCKED)"
                + " UPDATE " + table + " o SET claim_token = ?, lease_until = " + databaseNowPlusMillis()
                + " FROM picked WHERE o.id = picked.id"
                + " RETURNING " + returning;
        return claimInOneStatement(sql, ordering);
    }

    /** The start of the claim's transaction: the claim is its first statement. */
    @Override
    protected String databaseNow() {
        return "CURRENT_TIMESTAMP";
    }

    @Override
    protected String databaseNowPlusMillis() {
        return "(CURRENT_TIMESTAMP + CAST(? AS BIGINT) * INTERVAL '1 millisecond')";
    }

    /**
     * {@code ANALYZE}: with statistics of an empty table, the planner walks and sorts every pending
     * row for each claim instead of reading the pending index in order, until autovacuum analyzes.
     */
    @Override
    public void analyze(Connection connection) throws SQLException {
        try (java.sql.Statement statement = connection.createStatement()) {
            statement.execute("ANALYZE " + table);
        }
    }

    @Override
    protected String deleteDispatchedBefore() {
        return deleteDispatched;
    }
}
