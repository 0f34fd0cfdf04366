package io.sumi.budget.jdbc.internal;

import io.sumi.jdbc.DatabaseType;
import io.sumi.jdbc.internal.InstantBinding;

/** H2 2.x, for tests and local development: {@code MERGE ... WHEN NOT MATCHED THEN INSERT}. */
final class H2SpendStoreDialect extends SpendStoreDialect {

    /** Parameters: budget, window start. */
    private static final String SQL_STATEMENT_INSERT_WINDOW_IF_ABSENT = """
            MERGE INTO ${spend} t USING (VALUES (CAST(? AS VARCHAR(200)), CAST(? AS BIGINT))) s(b, w)
               ON t.budget_name = s.b AND t.window_start = s.w
             WHEN NOT MATCHED THEN INSERT (budget_name, window_start, spent) VALUES (s.b, s.w, 0)
            """;

    /** Parameters: budget, limit, configured limit, updated at. */
    private static final String SQL_STATEMENT_INSERT_LIMIT_IF_ABSENT = """
            MERGE INTO ${limit} t USING (VALUES (CAST(? AS VARCHAR(200)), CAST(? AS DOUBLE PRECISION),
                   CAST(? AS DOUBLE PRECISION), CAST(? AS TIMESTAMP WITH TIME ZONE))) s(b, l, c, u)
               ON t.budget_name = s.b
             WHEN NOT MATCHED THEN INSERT (budget_name, spend_limit, configured_limit, updated_at)
                  VALUES (s.b, s.l, s.c, s.u)
            """;

    private static final String SQL_QUERY_NOW = """
            SELECT CURRENT_TIMESTAMP AS db_now
            """;

    H2SpendStoreDialect(String spendTable, String limitTable) {
        super(
                spendTable,
                limitTable,
                InstantBinding.of(DatabaseType.H2),
                SQL_STATEMENT_INSERT_WINDOW_IF_ABSENT,
                SQL_STATEMENT_INSERT_LIMIT_IF_ABSENT,
                SQL_QUERY_NOW);
    }
}
