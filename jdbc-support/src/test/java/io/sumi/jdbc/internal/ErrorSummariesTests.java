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
}
