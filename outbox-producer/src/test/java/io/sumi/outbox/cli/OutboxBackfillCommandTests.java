package io.sumi.outbox.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The command line's parsing; running it against a database is in {@code OutboxBackfillIntegrationTests}. */
class OutboxBackfillCommandTests {

    @Test
    void durationsAreParsedInTheUsualShortForms() {
        assertThat(OutboxBackfillCommand.parseDuration("200ms")).isEqualTo(Duration.ofMillis(200));
        assertThat(OutboxBackfillCommand.parseDuration("5s")).isEqualTo(Duration.ofSeconds(5));
        assertThat(OutboxBackfillCommand.parseDuration("2m")).isEqualTo(Duration.ofMinutes(2));
        assertThat(OutboxBackfillCommand.parseDuration("1h")).isEqualTo(Duration.ofHours(1));
        assertThat(OutboxBackfillCommand.parseDuration("1d")).isEqualTo(Duration.ofDays(1));
        assertThat(OutboxBackfillCommand.parseDuration("PT3S")).isEqualTo(Duration.ofSeconds(3));
        assertThatIllegalArgumentException()
                .isThrownBy(() -> OutboxBackfillCommand.parseDuration("soon"))
                .withMessageContaining("Invalid duration 'soon'");
    }
}
