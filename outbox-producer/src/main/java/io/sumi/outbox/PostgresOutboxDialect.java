package io.sumi.outbox;

import io.sumi.jdbc.internal.InstantBinding;
import io.sumi.jdbc.internal.SqlTemplate;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;

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

    // The clock is CURRENT_TIMESTAMP, the start of the claim's transaction (opened by the claim's
    // round trip, whose plan settings precede the claim); a lease is bound as milliseconds added to it.

    /**
     * Sent with each claim, in its transaction ({@code SET LOCAL}: the pooled connection has its
     * settings back at commit), in the same round trip. The claim has one good plan: walk the
     * pending index in id order, probe the aggregate index for each candidate, stop at the limit.
     * Under statistics taken while the outbox was empty (a new table, one that retention emptied,
     * until autovacuum analyzes it again) the planner believes the pending rows are few and instead
     * reads all of them, probes each and sorts them: measured on 30,000 pending rows, 77 ms a claim
     * instead of 3 ms, and longer the longer the backlog, so a burst that outruns the claim grows
     * until the statistics catch up. With the sort and the other join and scan shapes priced out,
     * the walk is the cheapest plan whatever the statistics say; it is never a bad one, since the
     * claim takes the oldest claimable rows and the index is ordered that way.
     */
    private static final String SQL_STATEMENT_PLAN_SETTINGS = """
            SET LOCAL enable_sort = off; SET LOCAL enable_hashjoin = off; SET LOCAL enable_mergejoin = off;
            SET LOCAL enable_seqscan = off;
            """;

    /**
     * Picks, leases and returns the rows; {@code ${candidates}} is {@link #candidates}. Parameters:
     * those of the candidates, the limit, the claim token, the lease in milliseconds.
     */
    private static final String SQL_STATEMENT_CLAIM = """
            WITH picked AS MATERIALIZED (${candidates} LIMIT ? FOR UPDATE SKIP LOCKED)
            UPDATE ${table} o
               SET claim_token = ?, lease_until = (CURRENT_TIMESTAMP + CAST(? AS BIGINT) * INTERVAL '1 millisecond')
              FROM picked
             WHERE o.id = picked.id
            RETURNING o.id, o.aggregate_id, o.topic, o.payload, o.headers, o.created_at, o.available_at, o.dispatched_at,
                      o.attempts, o.last_error, o.parked_at, o.dispatch_outcome
            """;

    /**
     * SKIP LOCKED: instances pruning at the same time take disjoint rows instead of queueing.
     * Parameters: the cutoff, the limit.
     */
    private static final String SQL_STATEMENT_DELETE_DISPATCHED_BEFORE = """
            DELETE FROM ${table}
             WHERE id IN (SELECT id FROM ${table} WHERE dispatched_at < ? ORDER BY dispatched_at LIMIT ? FOR UPDATE SKIP LOCKED)
            """;

    private static final String SQL_STATEMENT_ANALYZE = "ANALYZE ${table}";

    /**
     * The pending rows the planner believes the table holds: the share of rows without
     * {@code dispatched_at} in the last statistics, times the rows the table holds now as the
     * planner counts them (the density of the last statistics times the table's pages now); and
     * whether the user owns the table, which {@code ANALYZE} requires (it skips the table with a
     * warning otherwise). No row when the table has no statistics (never analyzed, or analyzed
     * while empty): the planner then takes a default share, which gives the claim its good plan.
     * Parameter: the table's name.
     */
    private static final String SQL_QUERY_PENDING_ESTIMATE = """
            SELECT s.null_frac * GREATEST(c.reltuples, 0) / GREATEST(c.relpages, 1)
                   * (pg_relation_size(c.oid) / current_setting('block_size')::int),
                   pg_has_role(c.relowner, 'USAGE')
              FROM pg_class c
              JOIN pg_namespace n ON n.oid = c.relnamespace
              JOIN pg_stats s ON s.schemaname = n.nspname AND s.tablename = c.relname AND s.attname = 'dispatched_at'
             WHERE c.oid = CAST(? AS regclass)
            """;

    private final String claim;
    private final String deleteDispatched;
    private final String analyze;

    PostgresOutboxDialect(String table) {
        super(table, InstantBinding.TIMESTAMP_WITH_TIME_ZONE, "CURRENT_TIMESTAMP", "c.id");
        this.claim = SqlTemplate.fill(SQL_STATEMENT_CLAIM, "table", table);
        this.deleteDispatched = SqlTemplate.fill(SQL_STATEMENT_DELETE_DISPATCHED_BEFORE, "table", table);
        this.analyze = SqlTemplate.fill(SQL_STATEMENT_ANALYZE, "table", table);
    }

    /**
     * The claim among given ids: {@link #SQL_STATEMENT_CLAIM} whose candidates are also in the
     * array parameter (bound right after {@code now}); the limit is the number of ids.
     */
    @Override
    public ClaimAmong claimAmong(Ordering ordering) {
        String sql = SQL_STATEMENT_PLAN_SETTINGS
                + SqlTemplate.fill(claim, "candidates", candidates(ordering, " AND c.id = ANY(?)"));
        return (connection, claimToken, now, lease, ids) -> {
            if (ids.isEmpty()) {
                return new ArrayList<>();
            }
            java.sql.Array idArray = connection.createArrayOf("bigint", ids.toArray(Long[]::new));
            try (PreparedStatement statement = connection.prepareStatement(sql)) {
                setInstant(statement, 1, now);
                statement.setArray(2, idArray);
                int index = 3;
                if (!ordering.allTopics()) {
                    for (String topic : ordering.topics()) {
                        statement.setString(index++, topic);
                    }
                }
                statement.setInt(index++, ids.size());
                statement.setLong(index++, claimToken);
                statement.setLong(index, lease.toMillis());
                return inIdOrder(readClaimedRows(statement));
            } finally {
                idArray.free();
            }
        };
    }

    @Override
    public Claim claim(Ordering ordering) {
        return claimInOneStatement(SQL_STATEMENT_PLAN_SETTINGS + claimStatement(ordering), ordering);
    }

    /** The claim's statement without its plan settings, for tests that explain its plan. */
    String claimStatement(Ordering ordering) {
        return SqlTemplate.fill(claim, "candidates", candidates(ordering));
    }

    /** The claim's text is the plan settings, then the claim: its rows are the last result. */
    @Override
    protected List<OutboxRecord> readClaimedRows(PreparedStatement statement) throws SQLException {
        boolean rowsNext = statement.execute();
        while (!rowsNext) {
            if (statement.getUpdateCount() == -1) {
                throw new SQLException("The outbox claim returned no rows result");
            }
            rowsNext = statement.getMoreResults();
        }
        return readRows(statement.getResultSet());
    }

    /** The plan settings the claims run with, for tests that explain a claim's plan. */
    static String planSettings() {
        return SQL_STATEMENT_PLAN_SETTINGS;
    }

    /**
     * {@code ANALYZE}: with statistics of an empty table, the planner walks and sorts every pending
     * row for each claim instead of reading the pending index in order, until autovacuum analyzes.
     */
    @Override
    public void analyze(Connection connection) throws SQLException {
        try (java.sql.Statement statement = connection.createStatement()) {
            statement.execute(analyze);
        }
    }

    /**
     * Statistics taken while every row was dispatched (the steady state of an outbox, and the one
     * autovacuum analyzes it in; a big table is analyzed again only after a tenth of its rows
     * changed) make the planner believe the pending rows are none. Both partial indexes then look
     * empty, so scanning one whole costs as little as probing it, and the order gate's probe reads
     * every pending row for each candidate instead of the few of its aggregate: measured at 50,000
     * pending rows, 2 s a claim instead of a few milliseconds. No plan setting rules that shape
     * out; fresh statistics do.
     */
    @Override
    public @Nullable PendingEstimate pendingEstimate(Connection connection) throws SQLException {
        try (PreparedStatement statement = connection.prepareStatement(SQL_QUERY_PENDING_ESTIMATE)) {
            statement.setString(1, table);
            try (java.sql.ResultSet rs = statement.executeQuery()) {
                return rs.next() ? new PendingEstimate(rs.getDouble(1), rs.getBoolean(2)) : null;
            }
        }
    }

    @Override
    protected String deleteDispatchedBefore() {
        return deleteDispatched;
    }
}
