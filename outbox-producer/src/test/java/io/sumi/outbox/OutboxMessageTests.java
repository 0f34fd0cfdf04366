package io.sumi.outbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import io.sumi.consumer.HandlerDefinition;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;

class OutboxMessageTests {

    private static final Instant NOW = Instant.parse("2030-01-01T00:00:00Z");

    @Test
    void theBuilderPutsSchemaVersionTenantAndTraceIntoHeaders() {
        OutboxMessage message = OutboxMessage.builder("order-1", "mail.send", "{}")
                .schemaVersion("2")
                .tenant("acme")
                .traceId("t-1")
                .header("x", "y")
                .build();
        assertThat(message.headers())
                .containsExactly(
                        java.util.Map.entry(OutboxHeaders.SCHEMA_VERSION, "2"),
                        java.util.Map.entry(OutboxHeaders.TENANT_ID, "acme"),
                        java.util.Map.entry(OutboxHeaders.TRACE_ID, "t-1"),
                        java.util.Map.entry("x", "y"));
    }

    @Test
    void availabilityComesFromTheDelayOrTheTimeAndNeverLiesInThePast() {
        assertThat(OutboxMessage.of("a", "t", "p").availableAt(NOW)).isEqualTo(NOW);
        assertThat(OutboxMessage.builder("a", "t", "p")
                        .delay(Duration.ofMinutes(3))
                        .build()
                        .availableAt(NOW))
                .isEqualTo(NOW.plusSeconds(180));
        assertThat(OutboxMessage.builder("a", "t", "p")
                        .availableAt(NOW.plusSeconds(5))
                        .build()
                        .availableAt(NOW))
                .isEqualTo(NOW.plusSeconds(5));
        assertThat(OutboxMessage.builder("a", "t", "p")
                        .availableAt(NOW.minusSeconds(5))
                        .build()
                        .availableAt(NOW))
                .isEqualTo(NOW);
    }

    @Test
    void invalidMessagesAreRejectedWithTheReason() {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> OutboxMessage.of(" ", "t", "p"))
                .withMessageContaining("aggregate id");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> OutboxMessage.of("a", "", "p"))
                .withMessageContaining("topic");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> OutboxMessage.of("a".repeat(201), "t", "p"))
                .withMessageContaining("201 characters")
                .withMessageContaining("not truncated");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> OutboxMessage.builder("a", "t", "p")
                        .header(OutboxHeaders.OUTBOX_ID, "1")
                        .build())
                .withMessageContaining("reserved");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> OutboxMessage.builder("a", "t", "p")
                        .delay(Duration.ofSeconds(-1))
                        .build());
        assertThatIllegalArgumentException()
                .isThrownBy(() -> new OutboxMessage("a", "t", "p", java.util.Map.of(), NOW, Duration.ZERO));
    }

    @Test
    void theOutboxIdHeaderIsTheOneSumiConsumersReadTheKeyFrom() {
        assertThat(OutboxHeaders.OUTBOX_ID).isEqualTo(HandlerDefinition.OUTBOX_ID_HEADER);
        assertThat(HandlerDefinition.DEFAULT_KEY_HEADERS.get(0)).isEqualTo(OutboxHeaders.OUTBOX_ID);
    }
}
