package io.sumi.budget.jdbc;

import io.sumi.budget.SpendStore;
import io.sumi.budget.jdbc.internal.SpendStoreDialect;
import io.sumi.jdbc.DatabaseType;
import io.sumi.jdbc.internal.InstantBinding;
import io.sumi.jdbc.internal.JdbcRunner;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * The {@link SpendStore} of fleet budgets in a relational database: tables
 * {@code sumi_budget_spend} (one row per budget and window) and {@code sumi_budget_limit} (the
 * fleet's limit per budget), created by {@code sumi-migrations}
 * ({@code db/sumi/{vendor}/R__sumi_budgets.sql}) on PostgreSQL, MariaDB and H2. Both names can be
 * changed ({@link Builder#spendTableName}, {@link Builder#limitTableName}; validated as SQL
 * identifiers, as the ledger's and the outbox's are); the SQL per database is a dialect, as the
 * ledger's and the outbox's.
 *
 * <p>A reservation is one statement, atomic under the row lock the database takes to update the
 * window's row:
 * <pre>{@code
 * UPDATE sumi_budget_spend SET spent = spent + ?
 *  WHERE budget_name = ? AND window_start = ?
 *    AND spent + ? <= (SELECT spend_limit FROM sumi_budget_limit WHERE budget_name = ?)
 * }</pre>
 * (the first reservation of a window inserts its row first, ignoring a duplicate). The window is
 * the database's: a reservation first reads the database's clock ({@code CURRENT_TIMESTAMP}, on
 * MariaDB {@code UTC_TIMESTAMP(6)}) on the same connection and names the window from it, so the
 * instances' clocks never name a window; old windows are deleted relative to that clock too. Every
 * statement runs on a connection of its own, committed at once (never in the caller's transaction:
 * a reservation must not roll back with the business work, nor wait for it), with a query timeout.
 */
public final class JdbcSpendStore implements SpendStore {

    /** Default query timeout: a budget waits at most this long for the database before failing closed. */
    public static final Duration DEFAULT_QUERY_TIMEOUT = Duration.ofSeconds(5);

    /** The default table of the windows' spend, as sumi-migrations creates it. */
    public static final String DEFAULT_SPEND_TABLE_NAME = SpendStoreDialect.DEFAULT_SPEND_TABLE_NAME;

    /** The default table of the fleet's limits, as sumi-migrations creates it. */
    public static final String DEFAULT_LIMIT_TABLE_NAME = SpendStoreDialect.DEFAULT_LIMIT_TABLE_NAME;

    private final DataSource dataSource;
    private final SpendStoreDialect dialect;
    private final InstantBinding instants;
    private final int queryTimeoutSeconds;
    private final Clock clock;
    /** Names the windows instead of the database's clock; {@code null}: the database's (the default). */
    private final @Nullable Clock windowClock;

    private JdbcSpendStore(Builder builder) {
        this.dataSource = Objects.requireNonNull(builder.dataSource, "dataSource");
        DatabaseType type = builder.databaseType != null ? builder.databaseType : DatabaseType.of(dataSource);
        this.dialect = SpendStoreDialect.of(type, builder.spendTableName, builder.limitTableName);
        this.instants = dialect.instants();
        this.queryTimeoutSeconds = (int) Math.max(1, builder.queryTimeout.toSeconds());
        this.clock = builder.clock;
        this.windowClock = builder.windowClock;
    }

    /** A store on {@code dataSource}, its database detected from the connection's metadata. */
    public static JdbcSpendStore of(DataSource dataSource) {
        return builder(dataSource).build();
    }

    public static Builder builder(DataSource dataSource) {
        return new Builder(dataSource);
    }

    @Override
    public double registerLimit(String budget, double configuredLimit) {
        return run("register the limit of budget " + budget, connection -> {
            try (PreparedStatement update = prepare(connection, dialect.registerChanged())) {
                update.setDouble(1, configuredLimit);
                update.setDouble(2, configuredLimit);
                instants.set(update, 3, clock.instant());
                update.setString(4, budget);
                update.setDouble(5, configuredLimit);
                update.executeUpdate();
            }
            try (PreparedStatement insert = prepare(connection, dialect.insertLimitIfAbsent())) {
                insert.setString(1, budget);
                insert.setDouble(2, configuredLimit);
                insert.setDouble(3, configuredLimit);
                instants.set(insert, 4, clock.instant());
                insertIfAbsent(insert);
            }
            try (PreparedStatement select = prepare(connection, dialect.selectLimit())) {
                select.setString(1, budget);
                try (ResultSet rows = select.executeQuery()) {
                    return rows.next() ? rows.getDouble(1) : configuredLimit;
                }
            }
        });
    }

    @Override
    public void setLimit(String budget, double limit) {
        execute("set the limit of budget " + budget, connection -> {
            try (PreparedStatement update = prepare(connection, dialect.setLimit())) {
                update.setDouble(1, limit);
                instants.set(update, 2, clock.instant());
                update.setString(3, budget);
                if (update.executeUpdate() > 0) {
                    return;
                }
            }
            try (PreparedStatement insert = prepare(connection, dialect.insertLimitIfAbsent())) {
                insert.setString(1, budget);
                insert.setDouble(2, limit);
                insert.setDouble(3, limit);
                instants.set(insert, 4, clock.instant());
                insertIfAbsent(insert);
            }
        });
    }

    @Override
    public Grant tryReserve(String budget, long windowMillis, double amount) {
        return run("reserve spend of budget " + budget, connection -> {
            Window window = currentWindow(connection, windowMillis);
            long windowStart = window.start();
            if (reserve(connection, budget, windowStart, amount)) {
                return new Grant(window, true);
            }
            // The window's first reservation: its row does not exist yet. Whoever inserts it (this
            // call or a concurrent one), the reservation is tried again on the row, so a caller that
            // lost the insert race is refused only if the limit refuses it.
            insertWindowIfAbsent(connection, budget, windowStart);
            return new Grant(window, reserve(connection, budget, windowStart, amount));
        });
    }

    /** The current window by the database's clock (or the {@linkplain Builder#windowClock window clock}). */
    private Window currentWindow(Connection connection, long windowMillis) throws SQLException {
        if (windowMillis <= 0) {
            throw new IllegalArgumentException("A window must be positive, was " + windowMillis + " ms");
        }
        if (windowClock != null) {
            return Window.at(windowClock.millis(), windowMillis);
        }
        try (PreparedStatement select = prepare(connection, dialect.now());
                ResultSet rows = select.executeQuery()) {
            if (!rows.next()) {
                throw new SQLException("The database did not answer its clock (" + dialect.now() + ")");
            }
            Instant now = instants.get(rows, "db_now");
            if (now == null) {
                throw new SQLException("The database answered no time (" + dialect.now() + ")");
            }
            long start = Math.floorDiv(now.toEpochMilli(), windowMillis) * windowMillis;
            // Rounded down: an instance must never believe the window lasts longer than it does.
            long left = Duration.between(now, Instant.ofEpochMilli(start + windowMillis))
                    .toMillis();
            return new Window(start, left);
        }
    }

    private boolean reserve(Connection connection, String budget, long windowStart, double amount) throws SQLException {
        try (PreparedStatement update = prepare(connection, dialect.reserve())) {
            update.setDouble(1, amount);
            update.setString(2, budget);
            update.setLong(3, windowStart);
            update.setDouble(4, amount);
            update.setString(5, budget);
            return update.executeUpdate() == 1;
        }
    }

    private void insertWindowIfAbsent(Connection connection, String budget, long windowStart) throws SQLException {
        try (PreparedStatement insert = prepare(connection, dialect.insertWindowIfAbsent())) {
            insert.setString(1, budget);
            insert.setLong(2, windowStart);
            insertIfAbsent(insert);
        }
    }

    /**
     * Runs a dialect's insert-if-absent. H2's {@code MERGE ... WHEN NOT MATCHED THEN INSERT} is not
     * atomic across sessions: two sessions that both find no row both insert, and the second fails on
     * the primary key. The row it wanted exists then, which is all the caller asked for.
     */
    private static void insertIfAbsent(PreparedStatement insert) throws SQLException {
        try {
            insert.executeUpdate();
        } catch (SQLException e) {
            String state = e.getSQLState();
            if (state == null || !state.startsWith("23")) {
                throw e;
            }
        }
    }

    @Override
    public void charge(String budget, long windowStart, double amount) {
        execute("charge spend of budget " + budget, connection -> {
            if (add(connection, dialect.charge(), budget, windowStart, amount) == 0) {
                insertWindowIfAbsent(connection, budget, windowStart);
                add(connection, dialect.charge(), budget, windowStart, amount);
            }
        });
    }

    @Override
    public void release(String budget, long windowStart, double amount) {
        run(
                "release spend of budget " + budget,
                connection -> add(connection, dialect.release(), budget, windowStart, amount));
    }

    private int add(Connection connection, String sql, String budget, long windowStart, double amount)
            throws SQLException {
        try (PreparedStatement update = prepare(connection, sql)) {
            update.setDouble(1, amount);
            update.setString(2, budget);
            update.setLong(3, windowStart);
            return update.executeUpdate();
        }
    }

    @Override
    public WindowState read(String budget, long windowStart) {
        return run("read the window of budget " + budget, connection -> readWindow(connection, budget, windowStart));
    }

    private WindowState readWindow(Connection connection, String budget, long windowStart) throws SQLException {
        try (PreparedStatement select = prepare(connection, dialect.read())) {
            select.setLong(1, windowStart);
            select.setString(2, budget);
            try (ResultSet rows = select.executeQuery()) {
                if (!rows.next()) {
                    // Not registered: nothing can be reserved until it is.
                    return new WindowState(0, 0);
                }
                double limit = rows.getDouble(1);
                double spent = rows.getDouble(2);
                return new WindowState(spent, limit);
            }
        }
    }

    @Override
    public CurrentWindow readCurrent(String budget, long windowMillis) {
        return run("read the window of budget " + budget, connection -> {
            Window window = currentWindow(connection, windowMillis);
            return new CurrentWindow(window, readWindow(connection, budget, window.start()));
        });
    }

    @Override
    public void forgetOldWindows(String budget, long windowMillis, int windowsKept) {
        run("forget old windows of budget " + budget, connection -> {
            Window window = currentWindow(connection, windowMillis);
            try (PreparedStatement delete = prepare(connection, dialect.forget())) {
                delete.setString(1, budget);
                delete.setLong(2, window.start() - Math.max(1, windowsKept) * windowMillis);
                return delete.executeUpdate();
            }
        });
    }

    private PreparedStatement prepare(Connection connection, String sql) throws SQLException {
        PreparedStatement statement = connection.prepareStatement(sql);
        statement.setQueryTimeout(queryTimeoutSeconds);
        return statement;
    }

    /** A statement whose answer is not needed: it ran, or {@link #run} threw. */
    private interface Statements {
        void run(java.sql.Connection connection) throws SQLException;
    }

    private void execute(String task, Statements work) {
        run(task, connection -> {
            work.run(connection);
            return Boolean.TRUE;
        });
    }

    private <T> T run(String task, JdbcRunner.Work<T> work) {
        try {
            return JdbcRunner.autoCommitted(dataSource, work);
        } catch (SQLException ex) {
            throw JdbcRunner.translate("Sumi budgets: " + task, ex);
        }
    }

    /** Builds a {@link JdbcSpendStore}. */
    public static final class Builder {

        private final DataSource dataSource;
        private @Nullable DatabaseType databaseType;
        private String spendTableName = DEFAULT_SPEND_TABLE_NAME;
        private String limitTableName = DEFAULT_LIMIT_TABLE_NAME;
        private Duration queryTimeout = DEFAULT_QUERY_TIMEOUT;
        private Clock clock = Clock.systemUTC();
        private @Nullable Clock windowClock;

        private Builder(DataSource dataSource) {
            this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
        }

        /** The database; detected from the DataSource if not set. */
        public Builder databaseType(DatabaseType databaseType) {
            this.databaseType = Objects.requireNonNull(databaseType, "databaseType");
            return this;
        }

        /**
         * The table of the windows' spend; validated as an SQL identifier, optionally
         * schema-qualified. Default {@value JdbcSpendStore#DEFAULT_SPEND_TABLE_NAME}.
         *
         * @throws IllegalArgumentException if it is not a valid table name
         * @since 0.1.0
         */
        public Builder spendTableName(String spendTableName) {
            this.spendTableName = SpendStoreDialect.validateSpendTableName(spendTableName);
            return this;
        }

        /**
         * The table of the fleet's limits; validated as an SQL identifier, optionally
         * schema-qualified. Default {@value JdbcSpendStore#DEFAULT_LIMIT_TABLE_NAME}.
         *
         * @throws IllegalArgumentException if it is not a valid table name
         * @since 0.1.0
         */
        public Builder limitTableName(String limitTableName) {
            this.limitTableName = SpendStoreDialect.validateLimitTableName(limitTableName);
            return this;
        }

        /** How long one statement may take before the budget fails closed; at least 1 s (JDBC counts seconds). */
        public Builder queryTimeout(Duration queryTimeout) {
            this.queryTimeout = Objects.requireNonNull(queryTimeout, "queryTimeout");
            return this;
        }

        /**
         * The clock of {@code updated_at}; the system clock by default. It never names a window:
         * the database's clock does (see {@link #windowClock}).
         */
        public Builder clock(Clock clock) {
            this.clock = Objects.requireNonNull(clock, "clock");
            return this;
        }

        /**
         * Names the windows by {@code windowClock} instead of the database's clock: for tests that
         * move time by hand (the budgets' clock then only measures how long a window has left, so
         * moving it alone cannot roll a fleet window). Never in production: the database's clock
         * is the one clock every instance shares, and with a clock of each JVM instances whose
         * clocks disagree by a window or more spend in different windows.
         *
         * @since 0.1.0
         */
        public Builder windowClock(Clock windowClock) {
            this.windowClock = Objects.requireNonNull(windowClock, "windowClock");
            return this;
        }

        public JdbcSpendStore build() {
            return new JdbcSpendStore(this);
        }
    }
}
