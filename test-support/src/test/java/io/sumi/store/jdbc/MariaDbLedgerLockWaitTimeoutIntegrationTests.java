package io.sumi.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.sumi.jdbc.DatabaseType;
import io.sumi.store.ClaimOutcome;
import io.sumi.store.ClaimRequest;
import io.sumi.store.ClaimResult;
import io.sumi.testing.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.datasource.DelegatingDataSource;
import org.springframework.jdbc.datasource.DriverManagerDataSource;

/**
 * Issue 8, defect 12: MariaDB's lock wait timeout (error 1205, SQLSTATE HY000) during a ledger
 * write is retried like a deadlock, not thrown at the first occurrence.
 */
class MariaDbLedgerLockWaitTimeoutIntegrationTests {

    @Test
    void aLockWaitTimeoutDuringALeaseClaimIsRetried() throws Exception {
        TestDatabase.MARIADB.dataSource(); // migrated
        String[] settings = TestDatabase.MARIADB.settings();
        DataSource direct = new DriverManagerDataSource(settings[0], settings[1], settings[2]);
        AtomicInteger connections = new AtomicInteger();
        // The ledger's sessions give up on a row lock after one second.
        DataSource impatient = new DelegatingDataSource(direct) {
            @Override
            public Connection getConnection() throws SQLException {
                Connection connection = super.getConnection();
                try (Statement statement = connection.createStatement()) {
                    statement.execute("SET SESSION innodb_lock_wait_timeout = 1");
                }
                connections.incrementAndGet();
                return connection;
            }
        };
        JdbcProcessedMessageStore store = JdbcProcessedMessageStore.builder(impatient)
                .databaseType(DatabaseType.MARIADB)
                .build();
        String consumer = "lock-wait-" + System.nanoTime();

        try (Connection blocker = direct.getConnection()) {
            blocker.setAutoCommit(false);
            // An uncommitted row with the same key: the ledger's insert waits for its lock.
            try (PreparedStatement insert = blocker.prepareStatement(
                    "INSERT INTO processed_messages"
                            + " (consumer, message_id, status, claim_token, attempts, first_seen_at) VALUES (?, 'k', 'IN_PROGRESS', 1, 0, UTC_TIMESTAMP(6))")) {
                insert.setString(1, consumer);
                insert.executeUpdate();
            }
            CompletableFuture<ClaimResult> claim = CompletableFuture.supplyAsync(
                    () -> store.claim(consumer, new ClaimRequest("k", null), Duration.ofMinutes(1)));
            // The first attempt timed out on the lock (1 s) and the store took a new connection to try again.
            await().atMost(Duration.ofSeconds(20)).until(() -> connections.get() >= 2 || claim.isDone());
            blocker.rollback();

            assertThat(claim.get(20, TimeUnit.SECONDS).outcome()).isEqualTo(ClaimOutcome.CLAIMED);
            assertThat(connections.get()).isGreaterThanOrEqualTo(2);
        }
    }
}
