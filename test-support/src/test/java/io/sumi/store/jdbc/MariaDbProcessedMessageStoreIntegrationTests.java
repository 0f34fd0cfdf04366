package io.sumi.store.jdbc;

import io.sumi.testing.TestDatabase;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;

class MariaDbProcessedMessageStoreIntegrationTests extends JdbcProcessedMessageStoreContractTests {

    @Override
    TestDatabase database() {
        return TestDatabase.MARIADB;
    }

    /**
     * A ledger created before Sumi's migration set utf8mb4: {@code last_error} in {@code utf8mb3}
     * refuses 4-byte characters in strict mode. The release stores the text without them.
     */
    @Test
    void aReleaseWithAnEmojiOnALegacyUtf8mb3LedgerReleasesAtOnce() {
        assertReleaseWithUnstorableErrorReleasesAtOnce(
                legacyStore("processed_messages_legacy_utf8mb3", "utf8mb3 COLLATE utf8mb3_bin"),
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
