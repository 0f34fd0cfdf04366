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
        assertThat(definition.lease()).isEqualTo(Duration.ofSeconds(30));
        assertThat(definition.maxRun()).as("the executor's default").isNull();
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

    @Test
    void aNonPositiveMaxRunIsRejected() {
        assertThatIllegalArgumentException()
                .isThrownBy(() ->
                        HandlerDefinition.builder("mail").maxRun(Duration.ZERO).build())
                .withMessageContaining("mail")
                .withMessageContaining("max run");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> IdempotentExecutor.builder(io.sumi.store.jdbc.JdbcProcessedMessageStore.builder(
                                        io.sumi.testing.TestDatabase.H2.dataSource())
                                .build())
                        .maxRun(Duration.ofSeconds(-1)));
    }

    @IdempotentHandler(maxRun = "10m", lease = "20s")
    void bounded() {}

    @IdempotentHandler(maxRun = "for ever")
    void unbounded() {}

    @Test
    void theAnnotationsMaxRunIsParsedAndCheckedAtResolution() throws Exception {
        HandlerDefaults defaults = HandlerDefaults.standard();
        HandlerDefinition bounded = defaults.resolve(
                getClass().getDeclaredMethod("bounded").getAnnotation(IdempotentHandler.class),
                "bounded",
                false,
                "bounded()");

        assertThat(bounded.maxRun()).isEqualTo(Duration.ofMinutes(10));
        assertThat(bounded.lease()).isEqualTo(Duration.ofSeconds(20));
        assertThatIllegalArgumentException()
                .isThrownBy(() -> defaults.resolve(
                        getClass().getDeclaredMethod("unbounded").getAnnotation(IdempotentHandler.class),
                        "unbounded",
                        false,
                        "unbounded()"))
                .withMessageContaining("maxRun of @IdempotentHandler on unbounded()");
    }
}
