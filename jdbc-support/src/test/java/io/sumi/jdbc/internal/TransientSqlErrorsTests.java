package io.sumi.jdbc.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.sql.SQLException;
import java.sql.SQLIntegrityConstraintViolationException;
import java.sql.SQLTimeoutException;
import java.sql.SQLTransactionRollbackException;
import java.sql.SQLTransientConnectionException;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.springframework.dao.CannotAcquireLockException;
import org.springframework.dao.DataIntegrityViolationException;
import org.springframework.dao.PessimisticLockingFailureException;
import org.springframework.jdbc.UncategorizedSQLException;

class TransientSqlErrorsTests {

    static SQLException sql(String state, int code) {
        return new SQLException("simulated " + state + "/" + code, state, code);
    }

    @Test
    void postgresSerializationFailureDeadlockAndLockTimeoutAreTransient() {
        assertThat(TransientSqlErrors.isTransient(sql("40001", 0))).isTrue();
        assertThat(TransientSqlErrors.isTransient(sql("40P01", 0))).isTrue();
        assertThat(TransientSqlErrors.isTransient(sql("55P03", 0))).isTrue();
    }

    @Test
    void mariaDbDeadlockAndLockWaitTimeoutAreTransient() {
        assertThat(TransientSqlErrors.isTransient(new SQLTransactionRollbackException("Deadlock found", "40001", 1213)))
                .isTrue();
        assertThat(TransientSqlErrors.isTransient(sql("HY000", 1205)))
                .as("lock wait timeout, SQLSTATE HY000")
                .isTrue();
        assertThat(TransientSqlErrors.isTransient(sql(null, 1205))).isTrue();
    }

    @Test
    void h2LockTimeoutAndDeadlockAreTransient() {
        assertThat(TransientSqlErrors.isTransient(
                        new SQLTimeoutException("Timeout trying to lock table", "HYT00", 50200)))
                .isTrue();
        assertThat(TransientSqlErrors.isTransient(sql("hyt00", 50200))).isTrue();
        assertThat(TransientSqlErrors.isTransient(sql("40001", 40001))).isTrue();
    }

    @Test
    void dataErrorsConstraintViolationsAndSyntaxErrorsAreNotTransient() {
        assertThat(TransientSqlErrors.isTransient(sql("22021", 0)))
                .as("PostgreSQL NUL in text")
                .isFalse();
        assertThat(TransientSqlErrors.isTransient(sql("22001", 1406)))
                .as("MariaDB data too long")
                .isFalse();
        assertThat(TransientSqlErrors.isTransient(sql("22001", 22001)))
                .as("H2 value too long")
                .isFalse();
        assertThat(TransientSqlErrors.isTransient(new SQLIntegrityConstraintViolationException("dup", "23000", 1062)))
                .isFalse();
        assertThat(TransientSqlErrors.isTransient(sql("23505", 0))).isFalse();
        assertThat(TransientSqlErrors.isTransient(sql("42P01", 0))).isFalse();
        assertThat(TransientSqlErrors.isTransient(sql(null, 0))).isFalse();
        assertThat(TransientSqlErrors.isTransient(new IllegalStateException("no SQL at all")))
                .isFalse();
    }

    @Test
    void aTransientErrorIsFoundInsideSpringsExceptionsAndDownTheCauseChain() {
        assertThat(TransientSqlErrors.isTransient(new CannotAcquireLockException("ledger claim", sql("HY000", 1205))))
                .isTrue();
        assertThat(TransientSqlErrors.isTransient(new PessimisticLockingFailureException("x", sql("40P01", 0))))
                .isTrue();
        assertThat(TransientSqlErrors.isTransient(new UncategorizedSQLException(
                        "outbox mark", null, new SQLException("wrapper", "HY000", 0, sql("HYT00", 50200)))))
                .isTrue();
        assertThat(TransientSqlErrors.isTransient(new RuntimeException(new IllegalStateException(sql("40001", 1213)))))
                .isTrue();
        SQLException chained = sql("HY000", 0);
        chained.setNextException(sql("40001", 1213));
        assertThat(TransientSqlErrors.isTransient(chained))
                .as("SQLException.getNextException")
                .isTrue();
        assertThat(TransientSqlErrors.isTransient(new DataIntegrityViolationException("too long", sql("22001", 1406))))
                .isFalse();
    }

    @Test
    void connectionFailuresAreToldApartFromTransientErrors() {
        assertThat(TransientSqlErrors.isConnectionFailure(new SQLTransientConnectionException("pool timeout", "08001")))
                .isTrue();
        assertThat(TransientSqlErrors.isConnectionFailure(new UncategorizedSQLException("mark", null, sql("08006", 0))))
                .isTrue();
        assertThat(TransientSqlErrors.isConnectionFailure(sql("40001", 1213))).isFalse();
        assertThat(TransientSqlErrors.isConnectionFailure(sql("22001", 0))).isFalse();
        assertThat(TransientSqlErrors.isTransient(sql("08006", 0)))
                .as("not retried at once")
                .isFalse();
    }

    @Test
    void retryingRunsTransientFailuresAgainAtMostFiveMoreTimes() throws SQLException {
        AtomicInteger runs = new AtomicInteger();
        assertThat(TransientSqlErrors.retrying(() -> {
                    if (runs.incrementAndGet() < 3) {
                        throw sql("HY000", 1205);
                    }
                    return "done";
                }))
                .isEqualTo("done");
        assertThat(runs).hasValue(3);

        runs.set(0);
        assertThatThrownBy(() -> TransientSqlErrors.retrying(() -> {
                    runs.incrementAndGet();
                    throw new CannotAcquireLockException("lock", sql("40P01", 0));
                }))
                .isInstanceOf(CannotAcquireLockException.class);
        assertThat(runs).hasValue(1 + TransientSqlErrors.RETRIES);

        runs.set(0);
        assertThatThrownBy(() -> TransientSqlErrors.retrying(() -> {
                    runs.incrementAndGet();
                    throw sql("22021", 0);
                }))
                .hasMessageContaining("22021");
        assertThat(runs).as("a data error is not retried").hasValue(1);
    }
}
