package io.sumi.budget.jdbc.internal;

import io.sumi.jdbc.DatabaseType;
import io.sumi.jdbc.internal.InstantBinding;
import io.sumi.jdbc.internal.SqlIdentifiers;
import io.sumi.jdbc.internal.SqlTemplate;

/**
 * The spend store's SQL for one database, as the ledger's and the outbox's dialects are: what
 * differs per vendor (inserting a row only if it is absent, the database's clock) lives in a
 * subclass; the rest lives here. Each statement is a named text-block constant
 * ({@code SQL_STATEMENT_*}) in the class of its vendor, or here when every vendor shares it; the
 * table names are formatted into them ({@link SqlTemplate}), validated as SQL identifiers by
 * {@link #of} before a dialect is made. Every other value is a bind parameter.
 */
public abstract class SpendStoreDialect {

    /** Default table of the windows' spend (sumi-migrations creates it). */
    public static final String DEFAULT_SPEND_TABLE_NAME = "sumi_budget_spend";

    /** Default table of the fleet's limits (sumi-migrations creates it). */
    public static final String DEFAULT_LIMIT_TABLE_NAME = "sumi_budget_limit";

    /**
     * Reserves {@code amount} in the window's row if it stays within the fleet's limit: atomic under
     * the row lock the update takes. Parameters: amount, budget, window start, amount, budget.
     */
    private static final String SQL_STATEMENT_RESERVE = """
            UPDATE ${spend} SET spent = spent + ?
             WHERE budget_name = ? AND window_start = ?
               AND spent + ? <= (SELECT l.spend_limit FROM ${limit} l WHERE l.budget_name = ?)
            """;

    /** Parameters: amount, budget, window start. */
    private static final String SQL_STATEMENT_CHARGE = """
            UPDATE ${spend} SET spent = spent + ? WHERE budget_name = ? AND window_start = ?
            """;

    /** Parameters: amount, budget, window start. */
    private static final String SQL_STATEMENT_RELEASE = """
            UPDATE ${spend} SET spent = spent - ? WHERE budget_name = ? AND window_start = ?
            """;

    /** Parameters: window start, budget. */
    private static final String SQL_STATEMENT_READ = """
            SELECT l.spend_limit,
                   (SELECT s.spent FROM ${spend} s WHERE s.budget_name = l.budget_name AND s.window_start = ?)
                   AS spent
              FROM ${limit} l WHERE l.budget_name = ?
            """;

    /** Parameters: budget, the oldest window start kept. */
    private static final String SQL_STATEMENT_FORGET = """
            DELETE FROM ${spend} WHERE budget_name = ? AND window_start < ?
            """;

    /**
     * A new deployment's configured limit replaces the fleet's; a restart with the same
     * configuration does not. Parameters: limit, configured limit, updated at, budget, configured limit.
     */
    private static final String SQL_STATEMENT_REGISTER_CHANGED = """
            UPDATE ${limit} SET spend_limit = ?, configured_limit = ?, updated_at = ?
             WHERE budget_name = ? AND configured_limit <> ?
            """;

    /** Parameters: limit, updated at, budget. */
    private static final String SQL_STATEMENT_SET_LIMIT = """
            UPDATE ${limit} SET spend_limit = ?, updated_at = ? WHERE budget_name = ?
            """;

    /** Parameters: budget. */
    private static final String SQL_STATEMENT_SELECT_LIMIT = """
            SELECT spend_limit FROM ${limit} WHERE budget_name = ?
            """;

    private final InstantBinding instants;
    private final String reserve;
    private final String charge;
    private final String release;
    private final String read;
    private final String forget;
    private final String registerChanged;
    private final String setLimit;
    private final String selectLimit;
    private final String insertWindowIfAbsent;
    private final String insertLimitIfAbsent;
    private final String now;

    /**
     * @param insertWindowIfAbsent the vendor's insert of a window's row unless it exists (slot
     *     {@code ${spend}}); parameters: budget, window start
     * @param insertLimitIfAbsent the vendor's insert of a budget's limit unless it exists (slot
     *     {@code ${limit}}); parameters: budget, limit, configured limit, updated at
     * @param now the vendor's query of the database's clock: one row, column {@code db_now}
     */
    protected SpendStoreDialect(
            String spendTable,
            String limitTable,
            InstantBinding instants,
            String insertWindowIfAbsent,
            String insertLimitIfAbsent,
            String now) {
        this.instants = instants;
        this.reserve = spendAndLimit(SQL_STATEMENT_RESERVE, spendTable, limitTable);
        this.charge = SqlTemplate.fill(SQL_STATEMENT_CHARGE, "spend", spendTable);
        this.release = SqlTemplate.fill(SQL_STATEMENT_RELEASE, "spend", spendTable);
        this.read = spendAndLimit(SQL_STATEMENT_READ, spendTable, limitTable);
        this.forget = SqlTemplate.fill(SQL_STATEMENT_FORGET, "spend", spendTable);
        this.registerChanged = SqlTemplate.fill(SQL_STATEMENT_REGISTER_CHANGED, "limit", limitTable);
        this.setLimit = SqlTemplate.fill(SQL_STATEMENT_SET_LIMIT, "limit", limitTable);
        this.selectLimit = SqlTemplate.fill(SQL_STATEMENT_SELECT_LIMIT, "limit", limitTable);
        this.insertWindowIfAbsent = SqlTemplate.fill(insertWindowIfAbsent, "spend", spendTable);
        this.insertLimitIfAbsent = SqlTemplate.fill(insertLimitIfAbsent, "limit", limitTable);
        this.now = SqlTemplate.fill(now);
    }

    private static String spendAndLimit(String template, String spendTable, String limitTable) {
        return SqlTemplate.fill(template, "spend", spendTable, "limit", limitTable);
    }

    /**
     * The dialect of {@code type} on the given tables.
     *
     * @throws IllegalArgumentException if a table name is not an SQL identifier (optionally
     *     schema-qualified)
     */
    public static SpendStoreDialect of(DatabaseType type, String spendTable, String limitTable) {
        String spend = validateSpendTableName(spendTable);
        String limit = validateLimitTableName(limitTable);
        return switch (type) {
            case POSTGRESQL -> new PostgresSpendStoreDialect(spend, limit);
            case MARIADB -> new MariaDbSpendStoreDialect(spend, limit);
            case H2 -> new H2SpendStoreDialect(spend, limit);
        };
    }

    /**
     * The budget spend table's name, checked.
     *
     * @throws IllegalArgumentException unless {@code name} is an SQL identifier, optionally schema-qualified
     */
    public static String validateSpendTableName(String name) {
        return SqlIdentifiers.requireTableName(name, "budget spend", DEFAULT_SPEND_TABLE_NAME);
    }

    /**
     * The budget limit table's name, checked.
     *
     * @throws IllegalArgumentException unless {@code name} is an SQL identifier, optionally schema-qualified
     */
    public static String validateLimitTableName(String name) {
        return SqlIdentifiers.requireTableName(name, "budget limit", DEFAULT_LIMIT_TABLE_NAME);
    }

    public InstantBinding instants() {
        return instants;
    }

    public String reserve() {
        return reserve;
    }

    public String charge() {
        return charge;
    }

    public String release() {
        return release;
    }

    public String read() {
        return read;
    }

    public String forget() {
        return forget;
    }

    public String registerChanged() {
        return registerChanged;
    }

    public String setLimit() {
        return setLimit;
    }

    public String selectLimit() {
        return selectLimit;
    }

    public String insertWindowIfAbsent() {
        return insertWindowIfAbsent;
    }

    public String insertLimitIfAbsent() {
        return insertLimitIfAbsent;
    }

    /** The database's clock: one row, column {@code db_now}. */
    public String now() {
        return now;
    }
}
