package io.sumi.budget;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sumi.budget.jdbc.JdbcSpendStore;
import io.sumi.testing.TestDatabase;
import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;
import java.time.Clock;
import java.util.UUID;
import java.util.logging.Logger;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * Instances of a fleet for the budget tests: each has its own connection pool, its own
 * {@link JdbcSpendStore} and its own {@link BudgetRegistry}, as separate JVMs would, on one database.
 */
final class FleetHarness {

    static final String DATABASE = "sumi_test_budgets";

    private FleetHarness() {}

    /** A fresh budget name, so that runs never share windows. */
    static String budgetName(String prefix) {
        return prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
    }

    /** Applies the migrations once (shared pool), then returns the settings of the database. */
    static String[] migrated(TestDatabase database) {
        database.dataSource(DATABASE, 2);
        return database.settings(DATABASE);
    }

    static HikariDataSource pool(String[] settings, String name, int size) {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(settings[0]);
        config.setUsername(settings[1]);
        config.setPassword(settings[2]);
        config.setMaximumPoolSize(size);
        config.setMinimumIdle(1);
        config.setConnectionTimeout(2_000);
        config.setPoolName(name);
        return new HikariDataSource(config);
    }

    /** One instance of the fleet. */
    static final class Instance implements AutoCloseable {
        final HikariDataSource pool;
        final SwitchableDataSource dataSource;
        final JdbcSpendStore store;
        final SimpleMeterRegistry meters = new SimpleMeterRegistry();
        final BudgetRegistry registry;

        Instance(String[] settings, String name, String budget, BudgetConfig config, Clock clock) {
            this(settings, name, budget, config, clock, null);
        }

        /**
         * @param windowClock names the store's windows instead of the database's clock (the
         *     instances of one fleet share it, as they share the database), or {@code null}
         */
        Instance(
                String[] settings,
                String name,
                String budget,
                BudgetConfig config,
                Clock clock,
                @Nullable Clock windowClock) {
            this.pool = pool(settings, name, 4);
            this.dataSource = new SwitchableDataSource(pool);
            JdbcSpendStore.Builder builder =
                    JdbcSpendStore.builder(dataSource).queryTimeout(java.time.Duration.ofSeconds(2));
            if (windowClock != null) {
                builder.windowClock(windowClock);
            }
            this.store = builder.build();
            this.registry = BudgetRegistry.builder()
                    .spendStore(store)
                    .clock(clock)
                    .meterRegistry(meters)
                    .budget(budget, config)
                    .build();
        }

        /** Dies as a killed JVM does: its pool goes away, nothing is given back. */
        void kill() {
            dataSource.down = true;
            pool.close();
        }

        @Override
        public void close() {
            if (!pool.isClosed()) {
                registry.close();
                pool.close();
            }
            meters.close();
        }
    }

    /** A DataSource whose database can be made unreachable (every connection attempt fails) and back. */
    static final class SwitchableDataSource implements DataSource {
        private final DataSource delegate;
        volatile boolean down;

        SwitchableDataSource(DataSource delegate) {
            this.delegate = delegate;
        }

        private void check() throws SQLException {
            if (down) {
                throw new SQLTransientConnectionException("Connection refused (test: the database is down)", "08001");
            }
        }

        @Override
        public Connection getConnection() throws SQLException {
            check();
            return delegate.getConnection();
        }

        @Override
        public Connection getConnection(String username, String password) throws SQLException {
            check();
            return delegate.getConnection(username, password);
        }

        @Override
        public PrintWriter getLogWriter() throws SQLException {
            return delegate.getLogWriter();
        }

        @Override
        public void setLogWriter(PrintWriter out) throws SQLException {
            delegate.setLogWriter(out);
        }

        @Override
        public void setLoginTimeout(int seconds) throws SQLException {
            delegate.setLoginTimeout(seconds);
        }

        @Override
        public int getLoginTimeout() throws SQLException {
            return delegate.getLoginTimeout();
        }

        @Override
        public Logger getParentLogger() {
            return Logger.getGlobal();
        }

        @Override
        public <T> T unwrap(Class<T> type) throws SQLException {
            return delegate.unwrap(type);
        }

        @Override
        public boolean isWrapperFor(Class<?> type) throws SQLException {
            return delegate.isWrapperFor(type);
        }
    }
}
