package io.sumi.jdbc.internal;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class ErrorSummariesTests {

    @Test
    void textsUpToTheColumnsLengthAreKeptWhole() {
        assertThat(ErrorSummaries.truncate("boom")).isEqualTo("boom");
        String exact = "e".repeat(ErrorSummaries.MAX_LENGTH);
        assertThat(ErrorSummaries.truncate(exact)).isSameAs(exact);
    }

    @Test
    void longerTextsAreCutToTheColumnsLength() {
        assertThat(ErrorSummaries.MAX_LENGTH)
                .as("VARCHAR(1000) in every migration")
                .isEqualTo(1000);
        assertThat(ErrorSummaries.truncate("a".repeat(999) + "bcd")).isEqualTo("a".repeat(999) + "b");
    }

    @Test
    void aCleanTextIsStoredAsItIs() {
        String text = "java.lang.IllegalStateException: SMTP 451 – réessayez, 再試行\n\tat line 2";
        assertThat(ErrorSummaries.sanitize(text)).isSameAs(text);
    }

    @Test
    void nulCharactersAreReplaced() {
        assertThat(ErrorSummaries.sanitize("a\u0000b\u0000")).isEqualTo("a\uFFFDb\uFFFD");
    }

    @Test
    void fourByteCharactersAreReplacedOneForOne() {
        assertThat(ErrorSummaries.sanitize("ok \uD83D\uDE00\uD83D\uDE00 ok")).isEqualTo("ok \uFFFD\uFFFD ok");
    }

    @Test
    void loneSurrogatesAreReplaced() {
        assertThat(ErrorSummaries.sanitize("a\uD83Db\uDE00c")).isEqualTo("a\uFFFDb\uFFFDc");
        assertThat(ErrorSummaries.sanitize("end\uD83D")).isEqualTo("end\uFFFD");
    }

    @Test
    void theCutCountsCharactersAfterTheReplacementsAndNeverSplitsAPair() {
        String text = "x".repeat(998) + "\uD83D\uDE00".repeat(5) + "tail";
        String stored = ErrorSummaries.sanitize(text);
        assertThat(stored).isEqualTo("x".repeat(998) + "\uFFFD\uFFFD");
        assertThat(stored).hasSize(ErrorSummaries.MAX_LENGTH);
        assertThat(ErrorSummaries.sanitize("y".repeat(5000))).isEqualTo("y".repeat(ErrorSummaries.MAX_LENGTH));
        assertThat(ErrorSummaries.sanitize("y".repeat(5000) + "\u0000"))
                .isEqualTo("y".repeat(ErrorSummaries.MAX_LENGTH));
    }
}
