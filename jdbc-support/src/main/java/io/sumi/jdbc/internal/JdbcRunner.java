package io.sumi.jdbc.internal;

import java.sql.Connection;
import java.sql.SQLException;
import javax.sql.DataSource;
import org.springframework.dao.DataAccessException;
import org.springframework.jdbc.UncategorizedSQLException;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.jdbc.support.SQLExceptionSubclassTranslator;
import org.springframework.jdbc.support.SQLExceptionTranslator;

/**
 * How the ledger and the outbox run their statements on a {@link DataSource}. Not API.
 *
 * <p>Connections of their own ({@link #inOwnTransaction}, {@link #autoCommitted}): lease-mode
 * ledger calls and the outbox dispatcher's claims and marks must commit at once, whatever
 * transaction the calling thread has: a claim must be visible to the other instances before the
 * work it guards runs, and a release or mark must neither wait for, nor roll back with, anyone
 * else's work. Both retry a run that loses to other transactions' locks (deadlock, lock wait
 * timeout), by the one rule of {@link TransientSqlErrors}; a retry is safe because the database
 * rolled the failed run back.
 *
 * <p>The caller's transaction ({@link #inCallerTransaction}): the connection Spring bound to the
 * current transaction on the DataSource, if any.
 */
public final class JdbcRunner {

    private static final SQLExceptionTranslator TRANSLATOR = new SQLExceptionSubclassTranslator();

    private JdbcRunner() {}

    /** Work on a connection. */
    @FunctionalInterface
    public interface Work<T> {
        T run(Connection connection) throws SQLException;
    }

    /**
     * Runs {@code work} on a connection of its own in ONE transaction, committed before this method
     * returns (rolled back if {@code work} fails), and runs it again while it fails
     * {@linkplain TransientSqlErrors#isTransient transiently}. The connection's auto-commit mode is
     * restored before it goes back to the pool.
     *
     * @throws SQLException the last failure, or the first one that is not transient
     */
    public static <T> T inOwnTransaction(DataSource dataSource, Work<T> work) throws SQLException {
        return TransientSqlErrors.retrying(() -> {
            try (Connection connection = dataSource.getConnection()) {
                boolean autoCommit = connection.getAutoCommit();
                if (autoCommit) {
                    connection.setAutoCommit(false);
                }
                T result;
                try {
                    result = work.run(connection);
                    connection.commit();
                } catch (SQLException | RuntimeException ex) {
                    rollbackQuietly(connection, ex);
                    if (autoCommit) {
                        restoreAutoCommitQuietly(connection, true, ex);
                    }
                    throw ex;
                }
                if (autoCommit) {
                    connection.setAutoCommit(true);
                }
                return result;
            }
        });
    }

    /**
     * Runs {@code work} on a connection of its own in auto-commit mode, so that each of its
     * statements commits by itself, and runs it again while it fails
     * {@linkplain TransientSqlErrors#isTransient transiently}. For work whose every statement is
     * complete on its own (a run again repeats the statements that committed, so they must be safe
     * to repeat). The connection's auto-commit mode is restored before it goes back to the pool.
     *
     * @throws SQLException the last failure, or the first one that is not transient
     */
    public static <T> T autoCommitted(DataSource dataSource, Work<T> work) throws SQLException {
        return TransientSqlErrors.retrying(() -> {
            try (Connection connection = dataSource.getConnection()) {
                boolean autoCommit = connection.getAutoCommit();
                if (!autoCommit) {
                    connection.setAutoCommit(true);
                }
                T result;
                try {
                    result = work.run(connection);
                } catch (SQLException | RuntimeException ex) {
                    if (!autoCommit) {
                        restoreAutoCommitQuietly(connection, false, ex);
                    }
                    throw ex;
                }
                if (!autoCommit) {
                    connection.setAutoCommit(false);
                }
                return result;
            }
        });
    }

    /**
     * Runs {@code work} on the connection of the current Spring-managed transaction on
     * {@code dataSource}, or on a connection of its own in auto-commit mode when there is none.
     * Not retried: a failure inside the caller's transaction is the caller's to handle.
     */
    public static <T> T inCallerTransaction(DataSource dataSource, Work<T> work) throws SQLException {
        Connection connection = DataSourceUtils.getConnection(dataSource);
        try {
            return work.run(connection);
        } finally {
            DataSourceUtils.releaseConnection(connection, dataSource);
        }
    }

    /**
     * Wraps an {@link SQLException} in Spring's exception hierarchy by its SQLSTATE and exception
     * class, so callers can tell, e.g., a lost connection from a constraint violation.
     *
     * @param task what failed, for the message ("Sumi outbox: claim")
     */
    public static DataAccessException translate(String task, SQLException ex) {
        return translate(TRANSLATOR, task, ex);
    }

    /** {@link #translate(String, SQLException)} with the caller's translator. */
    public static DataAccessException translate(SQLExceptionTranslator translator, String task, SQLException ex) {
        DataAccessException translated = translator.translate(task, null, ex);
        return translated != null ? translated : new UncategorizedSQLException(task, null, ex);
    }

    /**
     * Restores the auto-commit mode after a failed run, keeping the run's failure the reported one:
     * a connection that broke in the work (HikariCP then throws "Connection is closed", without an
     * SQLSTATE, from every call) must not replace the failure that says whether retrying can help
     * (found by the fault suite: a PostgreSQL restart during an outbox mark).
     */
    private static void restoreAutoCommitQuietly(Connection connection, boolean autoCommit, Exception failure) {
        try {
            connection.setAutoCommit(autoCommit);
        } catch (SQLException ex) {
            failure.addSuppressed(ex);
        }
    }

    private static void rollbackQuietly(Connection connection, Exception failure) {
        try {
            connection.rollback();
        } catch (SQLException ex) {
            failure.addSuppressed(ex);
        }
    }
}
