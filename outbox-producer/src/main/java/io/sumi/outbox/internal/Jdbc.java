package io.sumi.outbox.internal;

import io.sumi.jdbc.internal.JdbcRunner;
import io.sumi.jdbc.internal.TransientSqlErrors;
import java.sql.SQLException;
import javax.sql.DataSource;
import org.springframework.dao.DataAccessException;

/**
 * How the outbox takes connections: {@link JdbcRunner}, shared with the ledger, with the outbox's
 * SQL exceptions translated to Spring's {@link DataAccessException}s that name the outbox. The
 * dispatcher's statements run on connections of their own, committed at once, whatever transaction
 * the calling thread has: a claim must be visible to the other dispatchers before the batch is
 * sent, and a mark must not wait for, or roll back with, anyone else's work. Statements that meet a
 * deadlock or a lock timeout are retried a few times (each is all-or-nothing, so a retry is safe),
 * by the one rule of {@link TransientSqlErrors}.
 */
public final class Jdbc {

    private Jdbc() {}

    /** Work on a connection. */
    @FunctionalInterface
    public interface Work<T> extends JdbcRunner.Work<T> {}

    /**
     * Runs {@code work} on a connection of its own in one transaction, committed before this method
     * returns, retrying it on a deadlock or lock timeout.
     *
     * @throws DataAccessException if the work fails
     */
    public static <T> T inOwnTransaction(DataSource dataSource, String task, Work<T> work) {
        try {
            return JdbcRunner.inOwnTransaction(dataSource, work);
        } catch (SQLException ex) {
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
        try {
            return JdbcRunner.inCallerTransaction(dataSource, work);
        } catch (SQLException ex) {
            throw translate(task, ex);
        }
    }

    /** Wraps an {@link SQLException} in Spring's exception hierarchy. */
    public static DataAccessException translate(String task, SQLException ex) {
        return JdbcRunner.translate("Sumi outbox: " + task, ex);
    }
}
