package io.sumi.outbox.internal;

import io.sumi.store.jdbc.internal.TransientSqlErrors;
import java.sql.Connection;
import java.sql.SQLException;
import javax.sql.DataSource;
import org.springframework.dao.DataAccessException;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.jdbc.support.SQLExceptionSubclassTranslator;
import org.springframework.jdbc.support.SQLExceptionTranslator;

/**
 * How the outbox takes connections. The dispatcher's statements run on connections of their own,
 * committed at once, whatever transaction the calling thread has: a claim must be visible to the
 * other dispatchers before the batch is sent, and a mark must not wait for, or roll back with,
 * anyone else's work. Statements that meet a deadlock or a lock timeout are retried a few times
 * (each is all-or-nothing, so a retry is safe), by the ledger's rules ({@link TransientSqlErrors}).
 */
public final class Jdbc {

    private static final SQLExceptionTranslator TRANSLATOR = new SQLExceptionSubclassTranslator();

    private Jdbc() {
    }

    /** Work on a connection. */
    @FunctionalInterface
    public interface Work<T> {
        T run(Connection connection) throws SQLException;
    }

    /**
     * Runs {@code work} on a connection of its own in one transaction, committed before this method
     * returns, retrying it on a deadlock or lock timeout.
     *
     * @throws DataAccessException if the work fails
     */
    public static <T> T inOwnTransaction(DataSource dataSource, String task, Work<T> work) {
        try {
            return TransientSqlErrors.retrying(() -> {
                try (Connection connection = dataSource.getConnection()) {
                    boolean autoCommit = connection.getAutoCommit();
                    if (autoCommit) {
                        connection.setAutoCommit(false);
                    }
                    try {
                        T result = work.run(connection);
                        connection.commit();
                        return result;
                    }
                    catch (SQLException | RuntimeException ex) {
                        rollbackQuietly(connection, ex);
                        throw ex;
                    }
                    finally {
                        if (autoCommit) {
                            connection.setAutoCommit(true);
                        }
                    }
                }
            });
        }
        catch (SQLException ex) {
            throw translate(task, ex);
        }
    }

    /**
     * Runs {@code work} on the connection of the current Spring-managed transaction on
     * {@code dataSource}, or on a connection of its own in auto-commit mode when there is none.
     *
     * @throws DataAccessException if the work fails
     */
    public static <T> T inCallerTransaction(DataSource dataSource, String task, Work<T> work) {
        Connection connection = DataSourceUtils.getConnection(dataSource);
        try {
            return work.run(connection);
        }
        catch (SQLException ex) {
            throw translate(task, ex);
        }
        finally {
            DataSourceUtils.releaseConnection(connection, dataSource);
        }
    }

    /** Wraps an {@link SQLException} in Spring's exception hierarchy. */
    public static DataAccessException translate(String task, SQLException ex) {
        DataAccessException translated = TRANSLATOR.translate("Sumi outbox: " + task, null, ex);
        return translated != null ? translated
                : new org.springframework.jdbc.UncategorizedSQLException("Sumi outbox: " + task, null, ex);
    }

    private static void rollbackQuietly(Connection connection, Exception failure) {
        try {
            connection.rollback();
        }
        catch (SQLException ex) {
            failure.addSuppressed(ex);
        }
    }
}
