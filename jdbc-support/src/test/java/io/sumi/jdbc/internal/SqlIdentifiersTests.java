package io.sumi.jdbc.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import org.junit.jupiter.api.Test;

class SqlIdentifiersTests {

    @Test
    void plainAndSchemaQualifiedNamesPass() {
        assertThat(SqlIdentifiers.requireTableName("outbox", "outbox", "outbox"))
                .isEqualTo("outbox");
        assertThat(SqlIdentifiers.requireTableName("sumi.processed_messages", "ledger", "processed_messages"))
                .isEqualTo("sumi.processed_messages");
        assertThat(SqlIdentifiers.requireTableName("_t" + "x".repeat(61), "ledger", "processed_messages"))
                .hasSize(63);
    }

    @Test
    void anythingThatIsNotAPlainIdentifierIsRefusedBeforeItReachesSql() {
        for (String bad : new String[] {
            "outbox; DROP TABLE x", "1outbox", "a.b.c", "out-box", "\"outbox\"", "", " outbox", "t" + "x".repeat(63)
        }) {
            assertThatIllegalArgumentException()
                    .as(bad)
                    .isThrownBy(() -> SqlIdentifiers.requireTableName(bad, "outbox", "outbox"));
        }
        assertThatIllegalArgumentException()
                .isThrownBy(() -> SqlIdentifiers.requireTableName(null, "outbox", "outbox"));
    }

    @Test
    void theMessageNamesWhoseTableItIsAndAnExample() {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> SqlIdentifiers.requireTableName("x y", "ledger", "processed_messages"))
                .withMessage("Invalid ledger table name 'x y': expected an SQL identifier such as processed_messages or"
                        + " myschema.processed_messages (letters, digits and underscores, not starting with a digit, at most 63"
                        + " characters per part)");
    }
}
