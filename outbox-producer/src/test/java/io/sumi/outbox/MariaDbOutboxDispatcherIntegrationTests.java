package io.sumi.outbox;

import io.sumi.testing.TestDatabase;
import org.junit.jupiter.api.Test;

/**
 * The dispatcher on MariaDB only: outboxes whose {@code last_error} column predates Sumi's utf8mb4
 * migration. The tests of every database are {@link OutboxDispatcherContractTests}.
 */
class MariaDbOutboxDispatcherIntegrationTests extends OutboxDispatcherFixture {

    @Override
    TestDatabase database() {
        return TestDatabase.MARIADB;
    }

    /**
     * An outbox created before Sumi's migration set utf8mb4 (or by a schema tool with the server's
     * old default): {@code last_error} in {@code utf8mb3} refuses 4-byte characters in strict mode
     * ("Incorrect string value"). The text is stored without them.
     */
    @Test
    void anEmojiInTheErrorOfALegacyUtf8mb3OutboxFailsOnlyItsRow() {
        OutboxTable legacy = legacyTable("outbox_legacy_utf8mb3", "utf8mb3 COLLATE utf8mb3_bin");
        assertUnstorableErrorFailsOnlyItsRow(legacy, "outbox_legacy_utf8mb3", "broker said \uD83D\uDE00 no");
    }

    /**
     * A {@code last_error} column that refuses even the cleaned text (latin1 cannot hold the
     * replacement character): the row is marked without its error text, and the others are marked.
     */
    @Test
    void anErrorTextTheColumnRefusesEvenCleanedIsLeftOutAndTheRowStillCountsItsAttempt() {
        OutboxTable legacy = legacyTable("outbox_legacy_latin1", "latin1 COLLATE latin1_bin");
        assertUnstorableErrorFailsOnlyItsRow(legacy, "outbox_legacy_latin1", "broker said \uD83D\uDE00 no", false);
    }

    private OutboxTable legacyTable(String name, String charset) {
        jdbc.execute("DROP TABLE IF EXISTS " + name);
        jdbc.execute("CREATE TABLE " + name + " LIKE outbox");
        jdbc.execute("ALTER TABLE " + name + " MODIFY last_error VARCHAR(1000) CHARACTER SET " + charset);
        return OutboxTable.builder(dataSource).tableName(name).clock(clock).build();
    }
}
