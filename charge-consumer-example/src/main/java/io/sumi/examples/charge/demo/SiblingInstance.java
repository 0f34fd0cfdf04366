package io.sumi.examples.charge.demo;

import com.zaxxer.hikari.HikariDataSource;
import io.sumi.budget.Budget;
import io.sumi.budget.BudgetExhaustedException;
import io.sumi.budget.BudgetRegistry;
import io.sumi.budget.jdbc.JdbcSpendStore;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;

/**
 * A second instance of the charge consumer's budget, as another replica would hold it: its own
 * connection pool, its own {@link JdbcSpendStore} and {@link BudgetRegistry}, and a worker that
 * makes a paid call under budget {@code payments} every {@code period}. Nothing but the database is
 * shared with this application's budget, so the two spend one fleet-wide limit. (The sibling's calls
 * stand for another replica's charges; they do not reach the demo's payment provider, whose counts
 * stay this instance's.)
 */
final class SiblingInstance implements AutoCloseable {

    private final HikariDataSource pool;
    private final BudgetRegistry registry;
    private final Budget budget;
    private final AtomicBoolean running = new AtomicBoolean(true);
    private final AtomicLong permitted = new AtomicLong();
    private final AtomicLong refused = new AtomicLong();
    private final Thread worker;

    SiblingInstance(DataSource application, Budget applicationBudget, Duration period) {
        HikariDataSource template = unwrap(application, HikariDataSource.class);
        this.pool = new HikariDataSource();
        pool.setJdbcUrl(template.getJdbcUrl());
        pool.setUsername(template.getUsername());
        pool.setPassword(template.getPassword());
        pool.setMaximumPoolSize(2);
        pool.setPoolName("sibling-instance");
        this.registry = BudgetRegistry.builder()
                .spendStore(JdbcSpendStore.of(pool))
                .budget(applicationBudget.name(), applicationBudget.config())
                .build();
        this.budget = registry.budget(applicationBudget.name());
        this.worker = new Thread(() -> work(period), "sibling-instance");
        worker.setDaemon(true);
        worker.start();
    }

    private void work(Duration period) {
        while (running.get()) {
            try {
                budget.call(permitted::incrementAndGet);
            } catch (BudgetExhaustedException refusedByTheFleet) {
                refused.incrementAndGet();
            } catch (Exception ex) {
                throw new IllegalStateException(ex);
            }
            try {
                Thread.sleep(period.toMillis());
            } catch (InterruptedException ex) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    long permitted() {
        return permitted.get();
    }

    long refused() {
        return refused.get();
    }

    @Override
    public void close() {
        running.set(false);
        try {
            worker.join(5_000);
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
        registry.close();
        pool.close();
    }

    static <T> T unwrap(DataSource dataSource, Class<T> type) {
        try {
            return dataSource.unwrap(type);
        } catch (java.sql.SQLException ex) {
            throw new IllegalStateException("The demo's DataSource is not a " + type.getSimpleName(), ex);
        }
    }
}
