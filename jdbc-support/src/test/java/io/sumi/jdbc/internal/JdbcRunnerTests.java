package io.sumi.jdbc.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.dao.DataAccessException;
import org.springframework.dao.DataIntegrityViolationException;
import org.springframework.jdbc.UncategorizedSQLException;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.SingleConnectionDataSource;
import org.springframework.transaction.support.TransactionTemplate;

class JdbcRunnerTests {

    private SingleConnectionDataSource dataSource;

    @BeforeEach
    void createTable() throws SQLException {
        // One connection, never closed: what the runner leaves on it (auto-commit) is visible to the next user.
        dataSource = new SingleConnectionDataSource("jdbc:h2:mem:runner-" + UUID.randomUUID(), true);
        execute(dataSource, "CREATE TABLE t (id INT PRIMARY KEY)");
    }

    @Test
    void ownTransactionCommitsAllOfItsWork() throws SQLException {
        int inserted =
                JdbcRunner.inOwnTransaction(dataSource, connection -> insert(connection, 1) + insert(connection, 2));
        assertThat(inserted).isEqualTo(2);
        assertThat(count()).isEqualTo(2);
        assertThat(dataSource.getConnection().getAutoCommit())
                .as("auto-commit restored")
                .isTrue();
    }

    @Test
    void ownTransactionRollsBackAllOfItsWorkWhenAStatementFails() throws SQLException {
        assertThatThrownBy(() -> JdbcRunner.inOwnTransaction(
                        dataSource, connection -> insert(connection, 1) + insert(connection, 1)))
                .isInstanceOf(SQLException.class);
        assertThat(count()).as("the first insert rolled back with the second").isZero();
        assertThat(dataSource.getConnection().getAutoCommit()).isTrue();
    }

    @Test
    void autoCommittedKeepsTheStatementsThatSucceededBeforeAFailure() throws SQLException {
        try (Connection connection = dataSource.getConnection()) {
            connection.setAutoCommit(false);
        }
        assertThatThrownBy(() -> JdbcRunner.autoCommitted(
                        dataSource, connection -> insert(connection, 1) + insert(connection, 1)))
                .isInstanceOf(SQLException.class);
        assertThat(dataSource.getConnection().getAutoCommit())
                .as("the connection's mode restored")
                .isFalse();
        dataSource.getConnection().rollback();
        assertThat(count()).as("the first insert committed by itself").isEqualTo(1);
    }

    @Test
    void bothRunAgainWhenTheWorkLosesToOtherTransactionsLocks() throws SQLException {
        AtomicInteger runs = new AtomicInteger();
        int inserted = JdbcRunner.inOwnTransaction(dataSource, connection -> {
            insert(connection, 10 + runs.get());
            if (runs.incrementAndGet() < 3) {
                throw new SQLException("Deadlock found", "40001", 1213);
            }
            return 1;
        });
        assertThat(inserted).isEqualTo(1);
        assertThat(runs).hasValue(3);
        assertThat(count()).as("the failed runs rolled back").isEqualTo(1);

        runs.set(0);
        String done = JdbcRunner.autoCommitted(dataSource, connection -> {
            if (runs.incrementAndGet() < 2) {
                throw new SQLException("Lock wait timeout exceeded", "HY000", 1205);
            }
            return "done";
        });
        assertThat(done).isEqualTo("done");
        assertThat(runs).hasValue(2);
    }

    @Test
    void callerTransactionWorkCommitsAndRollsBackWithTheCaller() throws SQLException {
        TransactionTemplate transaction = new TransactionTemplate(new DataSourceTransactionManager(dataSource));
        transaction.executeWithoutResult(status -> {
            try {
                JdbcRunner.inCallerTransaction(dataSource, connection -> insert(connection, 1));
            } catch (SQLException ex) {
                throw new IllegalStateException(ex);
            }
            status.setRollbackOnly();
        });
        assertThat(count()).isZero();
        JdbcRunner.inCallerTransaction(dataSource, connection -> insert(connection, 2));
        assertThat(count()).as("no transaction: auto-commit").isEqualTo(1);
    }

    @Test
    void translationKeepsTheSqlStatesMeaningAndTheTask() {
        DataAccessException duplicate = JdbcRunner.translate(
                "Sumi outbox: append", new SQLException("Unique index or primary key violation", "23505", 23505));
        assertThat(duplicate)
                .isInstanceOf(DataIntegrityViolationException.class)
                .hasMessageContaining("Sumi outbox: append");
        DataAccessException unknown = JdbcRunner.translate("ledger claim", new SQLException("odd", "ZZ999", 0));
        assertThat(unknown).isInstanceOf(UncategorizedSQLException.class).hasMessageContaining("ledger claim");
    }

    private static int insert(Connection connection, int id) throws SQLException {
        try (Statement statement = connection.createStatement()) {
            return statement.executeUpdate("INSERT INTO t (id) VALUES (" + id + ")");
        }
    }

    private int count() throws SQLException {
        try (Statement statement = dataSource.getConnection().createStatement();
                ResultSet rs = statement.executeQuery("SELECT COUNT(*) FROM t")) {
            rs.next();
            return rs.getInt(1);
        }
    }

    private static void execute(DataSource dataSource, String sql) throws SQLException {
        try (Connection connection = dataSource.getConnection();
                Statement statement = connection.createStatement()) {
            statement.execute(sql);
        }
    }
}
