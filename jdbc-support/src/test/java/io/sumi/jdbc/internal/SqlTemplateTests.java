package io.sumi.jdbc.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import org.junit.jupiter.api.Test;

class SqlTemplateTests {

    private static final String SQL_STATEMENT_DELETE = """
            DELETE FROM ${table}
             WHERE id IN (${ids}) AND owner IN (SELECT owner FROM ${table})
            """;

    @Test
    void everySlotOfANameIsFilledAndTheTextBlockIsStripped() {
        assertThat(SqlTemplate.fill(SQL_STATEMENT_DELETE, "table", "sumi.outbox", "ids", "?, ?"))
                .isEqualTo("DELETE FROM sumi.outbox\n WHERE id IN (?, ?) AND owner IN (SELECT owner FROM sumi.outbox)");
    }

    @Test
    void slotsNotNamedStayForALaterFill() {
        String withTable = SqlTemplate.fill(SQL_STATEMENT_DELETE, "table", "outbox");

        assertThat(withTable).contains("${ids}").doesNotContain("${table}");
        assertThat(SqlTemplate.fill(withTable, "ids", "?")).contains("id IN (?)");
    }

    @Test
    void aNameWithoutASlotIsRefused() {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> SqlTemplate.fill(SQL_STATEMENT_DELETE, "tabel", "outbox"))
                .withMessageContaining("No slot ${tabel}");
        assertThatIllegalArgumentException().isThrownBy(() -> SqlTemplate.fill(SQL_STATEMENT_DELETE, "table"));
    }
}
