package io.sumi.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class HandlerDefinitionTests {

    @Test
    void defaultsTakeTheKeyFromTheOutboxIdThenTheIdempotencyKeyHeader() {
        HandlerDefinition definition = HandlerDefinition.builder("mail").build();

        assertThat(definition.consumer()).isEqualTo("mail");
        assertThat(definition.mode()).isEqualTo(IdempotencyMode.AUTO);
        assertThat(definition.lease()).isEqualTo(Duration.ofMinutes(5));
        assertThat(definition.fingerprintPolicy()).isEqualTo(FingerprintMismatchPolicy.WARN);
        assertThat(definition.keyHeaders()).containsExactly("outbox-id", "idempotency-key");
        assertThat(definition.keyExpression()).isNull();
    }

    @Test
    void blankKeyExpressionMeansNone() {
        assertThat(HandlerDefinition.builder("mail").keyExpression("  ").build().keyExpression())
                .isNull();
    }

    @Test
    void keyHeadersAreCopied() {
        List<String> headers = new ArrayList<>(List.of("a"));
        HandlerDefinition definition =
                HandlerDefinition.builder("mail").keyHeaders(headers).build();
        headers.add("b");

        assertThat(definition.keyHeaders()).containsExactly("a");
    }

    @Test
    void blankConsumerAndNonPositiveLeaseAreRejected() {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> HandlerDefinition.builder(" ").build())
                .withMessageContaining("consumer");
        assertThatIllegalArgumentException()
                .isThrownBy(() ->
                        HandlerDefinition.builder("mail").lease(Duration.ZERO).build())
                .withMessageContaining("mail")
                .withMessageContaining("lease");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> HandlerDefinition.builder("mail")
                        .lease(Duration.ofSeconds(-1))
                        .build());
    }
}
