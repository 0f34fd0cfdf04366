package io.sumi.jdbc.internal;

import java.sql.SQLException;
import java.sql.SQLNonTransientConnectionException;
import java.sql.SQLRecoverableException;
import java.sql.SQLTransientConnectionException;
import java.util.Locale;
import org.jspecify.annotations.Nullable;

/**
 * Which SQL errors are worth running the same statement again for, and the one retry loop the
 * ledger and the outbox share. Not API.
 *
 * <p>Transient ({@link #isTransient}): the database gave up on the statement because of other
 * transactions' locks, and rolled it back, so running it again may succeed:
 * <ul>
 *   <li>SQLSTATE class {@code 40} (transaction rollback): PostgreSQL serialization failure
 *   {@code 40001} and deadlock {@code 40P01}, MariaDB deadlock (error 1213, {@code 40001}),
 *   H2 deadlock ({@code 40001});</li>
 *   <li>MariaDB/MySQL lock wait timeout: error 1205 (SQLSTATE {@code HY000});</li>
 *   <li>H2 lock timeout: SQLSTATE {@code HYT00};</li>
 *   <li>PostgreSQL lock timeout ({@code lock_timeout}): SQLSTATE {@code 55P03}.</li>
 * </ul>
 * Data errors (class {@code 22}: NUL characters, values too long), constraint violations
 * ({@code 23}) and syntax errors ({@code 42}) are never transient: they fail the same way again.
 *
 * <p>The whole cause chain is searched, so an {@link SQLException} wrapped in one of Spring's
 * {@code DataAccessException}s (or chained by the driver) is found.
 *
 * <p>A lost connection ({@link #isConnectionFailure}) is a separate question: a statement whose
 * connection broke may or may not have committed, so only callers whose statements are safe to
 * repeat in that case (the outbox's fenced marks) retry on it, with a back-off.
 */
public final class TransientSqlErrors {

    /** Further runs after the first when a statement fails transiently: at most 6 runs in all. */
    public static final int RETRIES = 5;

    private static final int MARIADB_LOCK_WAIT_TIMEOUT = 1205;
    private static final int MARIADB_DEADLOCK = 1213;

    private TransientSqlErrors() {}

    /** Work that may throw an {@link SQLException}. */
    @FunctionalInterface
    public interface SqlWork<T> {
        T run() throws SQLException;
    }

    /**
     * Whether {@code failure}, or an {@link SQLException} in its cause chain, says the statement
     * lost to other transactions' locks (see the class comment). {@code false} for {@code null}.
     */
    public static boolean isTransient(Throwable failure) {
        for (@Nullable Throwable cause = failure; cause != null; cause = next(cause)) {
            if (cause instanceof SQLException sql && isTransientItself(sql)) {
                return true;
            }
        }
        return false;
    }

    private static boolean isTransientItself(SQLException sql) {
        String state = sql.getSQLState();
        if (state != null) {
            String upper = state.toUpperCase(Locale.ROOT);
            if (upper.startsWith("40") || upper.equals("HYT00") || upper.equals("55P03")) {
                return true;
            }
        }
        int code = sql.getErrorCode();
        return code == MARIADB_LOCK_WAIT_TIMEOUT || code == MARIADB_DEADLOCK;
    }

    /**
     * Whether {@code failure}, or an exception in its cause chain, says the connection to the
     * database failed or could not be had (SQLSTATE class {@code 08}, or the JDBC connection
     * exception types), so that the same work may succeed once the database is reachable again.
     */
    public static boolean isConnectionFailure(Throwable failure) {
        for (@Nullable Throwable cause = failure; cause != null; cause = next(cause)) {
            if (cause instanceof SQLTransientConnectionException
                    || cause instanceof SQLNonTransientConnectionException
                    || cause instanceof SQLRecoverableException) {
                return true;
            }
            if (cause instanceof SQLException sql
                    && sql.getSQLState() != null
                    && sql.getSQLState().startsWith("08")) {
                return true;
            }
            if (cause instanceof java.net.SocketException || cause instanceof java.net.SocketTimeoutException) {
                return true;
            }
        }
        return false;
    }

    /**
     * Runs {@code work}, and runs it again (at once, up to {@link #RETRIES} more times) while it
     * fails {@linkplain #isTransient transiently}. {@code work} must be all-or-nothing: a
     * transaction of its own that the database rolled back when it failed.
     *
     * @throws SQLException the last failure, or the first one that is not transient
     * @throws RuntimeException likewise, for work that throws unchecked exceptions
     */
    public static <T> T retrying(SqlWork<T> work) throws SQLException {
        for (int attempt = 1; ; attempt++) {
            try {
                return work.run();
            } catch (SQLException | RuntimeException ex) {
                if (attempt > RETRIES || !isTransient(ex)) {
                    throw ex;
                }
            }
        }
    }

    private static @Nullable Throwable next(Throwable cause) {
        @Nullable Throwable next = cause.getCause();
        if (next == null && cause instanceof SQLException sql) {
            next = sql.getNextException();
        }
        return next == cause ? null : next;
    }
}
