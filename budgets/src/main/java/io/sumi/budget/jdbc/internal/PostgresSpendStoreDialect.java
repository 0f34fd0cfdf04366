package io.sumi.budget.jdbc.internal;

import io.sumi.jdbc.DatabaseType;
import io.sumi.jdbc.internal.InstantBinding;

/** PostgreSQL: {@code ON CONFLICT DO NOTHING} inserts a row only if it is absent. */
final class PostgresSpendStoreDialect extends SpendStoreDialect {

    /** Parameters: budget, window start. */
    private static final String SQL_STATEMENT_INSERT_WINDOW_IF_ABSENT = """
            INSERT INTO ${spend} (budget_name, window_start, spent) VALUES (?, ?, 0) ON CONFLICT DO NOTHING
            """;

    /** Parameters: budget, limit, configured limit, updated at. */
    private static final String SQL_STATEMENT_INSERT_LIMIT_IF_ABSENT = """
            INSERT INTO ${limit} (budget_name, spend_limit, configured_limit, updated_at)
            VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING
            """;

    private static final String SQL_QUERY_NOW = """
            SELECT CURRENT_TIMESTAMP AS db_now
            """;

    PostgresSpendStoreDialect(String spendTable, String limitTable) {
        super(
                spendTable,
                limitTable,
                InstantBinding.of(DatabaseType.POSTGRESQL),
                SQL_STATEMENT_INSERT_WINDOW_IF_ABSENT,
                SQL_STATEMENT_INSERT_LIMIT_IF_ABSENT,
                SQL_QUERY_NOW);
    }
}
