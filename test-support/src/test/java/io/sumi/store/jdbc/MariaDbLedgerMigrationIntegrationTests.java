package io.sumi.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import io.sumi.store.ClaimOutcome;
import io.sumi.store.ClaimRequest;
import io.sumi.testing.ScratchDatabase;
import io.sumi.testing.TestDatabase;
import java.time.Duration;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * Upgrading a MariaDB ledger created with the PAD SPACE collation {@code utf8mb4_bin} (where
 * {@code 'k'} and {@code 'k '} were one key): Sumi's migration changes the key columns to
 * {@code utf8mb4_nopad_bin} in place, keeping every row exactly. Runs in a database of its own
 * next to the test database, created and dropped by the test.
 */
class MariaDbLedgerMigrationIntegrationTests {

    /** The ledger as Sumi's migration created it before the key columns were NO PAD. */
    static final String LEGACY_TABLE = """
            CREATE TABLE processed_messages (
                consumer      VARCHAR(200)  NOT NULL,
                message_id    VARCHAR(200)  NOT NULL,
                status        VARCHAR(16)   NOT NULL,
                claim_token   BIGINT        NOT NULL,
                lease_until   DATETIME(6),
                attempts      INT           NOT NULL,
                fingerprint   VARCHAR(64),
                last_error    VARCHAR(1000),
                first_seen_at DATETIME(6)   NOT NULL,
                processed_at  DATETIME(6),
                PRIMARY KEY (consumer, message_id)
            ) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin""";

    ScratchDatabase scratch;
    DataSource dataSource;

    @BeforeEach
    void legacyLedger() {
        scratch = ScratchDatabase.create(TestDatabase.MARIADB, "_upgrade");
        dataSource = scratch.dataSource();
        JdbcTemplate jdbc = new JdbcTemplate(dataSource);
        jdbc.execute(LEGACY_TABLE);
        for (String id : List.of("k", "注文-42-é", "🎉".repeat(100), "é".repeat(200))) {
            jdbc.update(
                    "INSERT INTO processed_messages (consumer, message_id, status, claim_token, attempts, first_seen_at,"
                            + " processed_at) VALUES ('mail', ?, 'COMPLETED', 7, 1, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))",
                    id);
        }
    }

    @AfterEach
    void dropDatabase() {
        scratch.close();
    }

    @Test
    void theMigrationMakesTheKeyColumnsNoPadAndKeepsEveryRow() {
        JdbcTemplate jdbc = new JdbcTemplate(dataSource);
        List<String> before =
                jdbc.queryForList("SELECT message_id FROM processed_messages ORDER BY message_id", String.class);

        // As in an application whose ledger predates this version: the changed repeatable script runs again.
        scratch.migrateAsAnUpgrade();

        assertThat(scratch.collations("processed_messages", "consumer", "message_id"))
                .containsExactly("utf8mb4_nopad_bin", "utf8mb4_nopad_bin");
        assertThat(jdbc.queryForList("SELECT message_id FROM processed_messages ORDER BY message_id", String.class))
                .hasSize(4)
                .containsExactlyElementsOf(before);
        JdbcProcessedMessageStore store =
                JdbcProcessedMessageStore.builder(dataSource).build();
        assertThat(store.claim("mail", new ClaimRequest("k", null), Duration.ofMinutes(5))
                        .outcome())
                .isEqualTo(ClaimOutcome.DUPLICATE);
        assertThat(store.claim("mail", new ClaimRequest("k ", null), Duration.ofMinutes(5))
                        .outcome())
                .as("a key of its own now")
                .isEqualTo(ClaimOutcome.CLAIMED);
        assertThat(store.claim("mail", new ClaimRequest("é".repeat(200), null), Duration.ofMinutes(5))
                        .outcome())
                .isEqualTo(ClaimOutcome.DUPLICATE);
    }
}
