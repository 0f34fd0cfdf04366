package io.sumi.budget.jdbc.internal;

import io.sumi.jdbc.DatabaseType;
import io.sumi.jdbc.internal.InstantBinding;

/**
 * MariaDB: {@code INSERT IGNORE} inserts a row only if it is absent; the clock is
 * {@code UTC_TIMESTAMP(6)}, not {@code NOW()}, which follows the session's time zone.
 */
final class MariaDbSpendStoreDialect extends SpendStoreDialect {

    /** Parameters: budget, window start. */
    private static final String SQL_STATEMENT_INSERT_WINDOW_IF_ABSENT = """
            INSERT IGNORE INTO ${spend} (budget_name, window_start, spent) VALUES (?, ?, 0)
            """;

    /** Parameters: budget, limit, configured limit, updated at. */
    private static final String SQL_STATEMENT_INSERT_LIMIT_IF_ABSENT = """
            INSERT IGNORE INTO ${limit} (budget_name, spend_limit, configured_limit, updated_at)
            VALUES (?, ?, ?, ?)
            """;

    private static final String SQL_QUERY_NOW = """
            SELECT UTC_TIMESTAMP(6) AS db_now
            """;

    MariaDbSpendStoreDialect(String spendTable, String limitTable) {
        super(
                spendTable,
                limitTable,
                InstantBinding.of(DatabaseType.MARIADB),
                SQL_STATEMENT_INSERT_WINDOW_IF_ABSENT,
                SQL_STATEMENT_INSERT_LIMIT_IF_ABSENT,
                SQL_QUERY_NOW);
    }
}
