package io.sumi.store.jdbc;

import static io.sumi.store.ProcessedMessageStoreContract.assertReleaseWithUnstorableErrorReleasesAtOnce;

import io.sumi.testing.TestDatabase;
import java.time.Clock;
import java.time.Duration;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The JDBC ledger on a MariaDB table that predates Sumi's utf8mb4 migration: its
 * {@code last_error} column refuses what the current one stores. MariaDB only; the ledger's
 * contract runs on every database in {@link JdbcProcessedMessageStoreContractTests}.
 */
class MariaDbLegacyLedgerIntegrationTests {

    /** As in the contract: the store's own clock runs a day behind, and nothing may depend on it. */
    final Clock clock = Clock.offset(Clock.systemUTC(), Duration.ofDays(-1));

    DataSource dataSource;
    String consumer;

    @BeforeEach
    void setUp() {
        dataSource = TestDatabase.MARIADB.dataSource();
        consumer = "contract-" + UUID.randomUUID();
    }

    @AfterEach
    void deleteTheTestsRows() {
        new JdbcTemplate(dataSource).update("DELETE FROM processed_messages WHERE consumer = ?", consumer);
    }

    /**
     * A ledger created before Sumi's migration set utf8mb4: {@code last_error} in {@code utf8mb3}
     * refuses 4-byte characters in strict mode. The release stores the text without them.
     */
    @Test
    void aReleaseWithAnEmojiOnALegacyUtf8mb3LedgerReleasesAtOnce() {
        assertReleaseWithUnstorableErrorReleasesAtOnce(
                legacyStore("processed_messages_legacy_utf8mb3", "utf8mb3 COLLATE utf8mb3_bin"),
                consumer,
                "java.lang.IllegalStateException: broker said \uD83D\uDE00 no",
                true);
    }

    /**
     * A {@code last_error} column that refuses even the cleaned text (latin1 cannot hold the
     * replacement character): the claim is released without its error text.
     */
    @Test
    void aReleaseWhoseCleanedErrorTheColumnStillRefusesReleasesWithoutTheText() {
        assertReleaseWithUnstorableErrorReleasesAtOnce(
                legacyStore("processed_messages_legacy_latin1", "latin1 COLLATE latin1_bin"),
                consumer,
                "java.lang.IllegalStateException: broker said \uD83D\uDE00 no",
                false);
    }

    private JdbcProcessedMessageStore legacyStore(String name, String charset) {
        JdbcTemplate jdbc = new JdbcTemplate(dataSource);
        jdbc.execute("DROP TABLE IF EXISTS " + name);
        jdbc.execute("CREATE TABLE " + name + " LIKE processed_messages");
        jdbc.execute("ALTER TABLE " + name + " MODIFY last_error VARCHAR(1000) CHARACTER SET " + charset);
        return JdbcProcessedMessageStore.builder(dataSource)
                .tableName(name)
                .clock(clock)
                .build();
    }
}
