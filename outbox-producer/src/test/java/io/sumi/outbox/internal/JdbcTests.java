package io.sumi.outbox.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import io.sumi.jdbc.internal.TransientSqlErrors;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.dao.DataAccessException;

class JdbcTests {

    /**
     * Seen in the fault suite after {@code pg_ctl stop -m fast}: the mark's statement fails with
     * SQLSTATE 08006, HikariCP then swaps the connection for a closed one whose every call throws
     * {@code SQLException("Connection is closed")} without an SQLSTATE, and restoring auto-commit
     * in the {@code finally} block threw that one instead of the real failure. The dispatcher no
     * longer saw a connection failure, gave up on the mark at once and left the sent rows to be
     * sent again when their lease ended.
     */
    @Test
    void lostConnectionStaysTheReportedFailureWhenRestoringAutoCommitFails() {
        SQLException lost = new SQLException("An I/O error occurred while sending to the backend.", "08006");
        DataSource dataSource = dataSource(brokenAfterFirstStatement());

        Throwable thrown = catchThrowable(() -> Jdbc.inOwnTransaction(dataSource, "mark", connection -> {
            throw lost;
        }));

        assertThat(thrown).isInstanceOf(DataAccessException.class).hasRootCause(lost);
        assertThat(TransientSqlErrors.isConnectionFailure(thrown)).isTrue();
        assertThat(lost.getSuppressed()).extracting(Throwable::getMessage).containsOnly("Connection is closed");
    }

    @Test
    void workThatCommitsReturnsItsResultAndRestoresAutoCommit() {
        AtomicBoolean autoCommit = new AtomicBoolean(true);
        Connection connection = (Connection) Proxy.newProxyInstance(
                getClass().getClassLoader(),
                new Class<?>[] {Connection.class},
                (proxy, method, args) -> switch (method.getName()) {
                    case "getAutoCommit" -> autoCommit.get();
                    case "setAutoCommit" -> {
                        autoCommit.set((Boolean) args[0]);
                        yield null;
                    }
                    default -> null;
                });

        Integer result = Jdbc.inOwnTransaction(dataSource(connection), "mark", c -> 42);
        assertThat(result).isEqualTo(42);
        assertThat(autoCommit).isTrue();
    }

    /** A connection in auto-commit mode whose every call after the first setAutoCommit fails as HikariCP's closed connection does. */
    private Connection brokenAfterFirstStatement() {
        AtomicBoolean closed = new AtomicBoolean();
        return (Connection) Proxy.newProxyInstance(
                getClass().getClassLoader(), new Class<?>[] {Connection.class}, (proxy, method, args) -> {
                    switch (method.getName()) {
                        case "getAutoCommit":
                            return true;
                        case "close":
                            return null;
                        case "setAutoCommit":
                            if (!closed.getAndSet(true)) {
                                return null; // the first call, before the work
                            }
                            throw new SQLException("Connection is closed");
                        default:
                            throw new SQLException("Connection is closed");
                    }
                });
    }

    private static DataSource dataSource(Connection connection) {
        return (DataSource) Proxy.newProxyInstance(
                JdbcTests.class.getClassLoader(), new Class<?>[] {DataSource.class}, (proxy, method, args) -> {
                    if (method.getName().equals("getConnection")) {
                        return connection;
                    }
                    throw new UnsupportedOperationException(method.getName());
                });
    }
}
