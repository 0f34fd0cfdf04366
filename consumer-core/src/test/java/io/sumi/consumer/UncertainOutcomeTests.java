package io.sumi.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sumi.consumer.exception.BatchFailedException;
import io.sumi.consumer.exception.ReconciliationRequiredException;
import io.sumi.store.ClaimRequest;
import io.sumi.store.MessageStatus;
import io.sumi.store.ProcessedMessage;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A lease-mode claim taken over after the provider's idempotency-key window is not run again
 * blindly: it is marked {@code RECONCILE}, counted, and refused until an operator resolves it.
 */
class UncertainOutcomeTests extends H2ExecutorTestSupport {

    static final Duration STRIPE_WINDOW = Duration.ofHours(24);

    IdempotentExecutor reconciling;

    @BeforeEach
    void reconcilingExecutor() {
        reconciling = IdempotentExecutor.builder(counting)
                .meterRegistry(meters)
                .reconcileAfter(STRIPE_WINDOW)
                .build();
    }

    /** A consumer that claimed the key and died before completing it (its lease runs out). */
    void crashedClaim(String key) {
        store.claim(consumer, new ClaimRequest(key, Fingerprints.of("payload of " + key)), LEASE);
    }

    @Test
    void aTakeoverAfterTheProviderWindowIsMarkedForReconciliationAndNotRun() {
        crashedClaim("order-1");
        advance(STRIPE_WINDOW.plusMinutes(1));
        AtomicInteger charges = new AtomicInteger();

        assertThatThrownBy(() -> reconciling.execute(lease(), message("order-1"), charges::incrementAndGet))
                .isInstanceOfSatisfying(ReconciliationRequiredException.class, ex -> {
                    assertThat(ex.isRetryable()).isFalse();
                    assertThat(ex.key()).isEqualTo("order-1");
                    assertThat(ex.consumer()).isEqualTo(consumer);
                    assertThat(ex.getMessage()).contains("RECONCILE", "PT24H");
                });

        assertThat(charges).hasValue(0);
        ProcessedMessage row = row("order-1").orElseThrow();
        assertThat(row.status()).isEqualTo(MessageStatus.RECONCILE);
        assertThat(row.lastError()).startsWith("RECONCILE: uncertain outcome after PT24H");
        assertThat(counter("sumi.reconcile.marked")).isEqualTo(1);
        assertThat(messages("reconcile")).isEqualTo(1);

        // Every later delivery is refused too, without running the handler, until an operator acts.
        advance(Duration.ofDays(3));
        assertThatThrownBy(() -> reconciling.execute(lease(), message("order-1"), charges::incrementAndGet))
                .isInstanceOf(ReconciliationRequiredException.class)
                .hasMessageContaining("awaits reconciliation");
        assertThatThrownBy(() ->
                        reconciling.executeBatch(lease(), List.of(message("order-0"), message("order-1")), indexes -> {
                            assertThat(indexes).containsExactly(0);
                        }))
                .isInstanceOfSatisfying(BatchFailedException.class, ex -> {
                    assertThat(ex.index()).isEqualTo(1);
                    assertThat(ex.getCause()).isInstanceOf(ReconciliationRequiredException.class);
                });
        assertThat(charges).hasValue(0);
        assertThat(messages("reconcile")).isEqualTo(3);
        assertThat(counter("sumi.reconcile.marked")).isEqualTo(1);
    }

    @Test
    void theOperatorResolvesARowByCompletingOrDeletingIt() throws Exception {
        crashedClaim("charged");
        crashedClaim("not-charged");
        advance(STRIPE_WINDOW.plusHours(1));
        for (String key : List.of("charged", "not-charged")) {
            assertThatThrownBy(() -> reconciling.execute(lease(), message(key), () -> "x"))
                    .isInstanceOf(ReconciliationRequiredException.class);
        }

        // The provider shows a charge for "charged": the operator completes its row; none for the
        // other: the operator deletes its row and the message is delivered again (from the DLT).
        jdbc.update(
                "UPDATE processed_messages SET status = 'COMPLETED', processed_at = CURRENT_TIMESTAMP"
                        + " WHERE consumer = ? AND message_id = ? AND status = 'RECONCILE'",
                consumer,
                "charged");
        jdbc.update(
                "DELETE FROM processed_messages WHERE consumer = ? AND message_id = ? AND status = 'RECONCILE'",
                consumer,
                "not-charged");

        AtomicInteger charges = new AtomicInteger();
        assertThat(reconciling
                        .execute(lease(), message("charged"), charges::incrementAndGet)
                        .outcome())
                .isEqualTo(MessageOutcome.DUPLICATE);
        assertThat(reconciling
                        .execute(lease(), message("not-charged"), charges::incrementAndGet)
                        .outcome())
                .isEqualTo(MessageOutcome.PROCESSED);
        assertThat(charges).hasValue(1);
    }

    @Test
    void aTakeoverWithinTheWindowRunsAgainWithTheSameKey() throws Exception {
        crashedClaim("order-1");
        advance(LEASE);
        AtomicInteger charges = new AtomicInteger();

        assertThat(reconciling
                        .execute(lease(), message("order-1"), charges::incrementAndGet)
                        .outcome())
                .isEqualTo(MessageOutcome.PROCESSED);
        assertThat(charges).hasValue(1);
        assertThat(status("order-1")).isEqualTo(MessageStatus.COMPLETED);
    }

    @Test
    void theHandlersOwnWindowWinsAndZeroTurnsTheCheckOff() throws Exception {
        crashedClaim("short");
        crashedClaim("off");
        advance(Duration.ofHours(2));

        assertThatThrownBy(() -> reconciling.execute(
                        definition(IdempotencyMode.LEASE)
                                .reconcileAfter(Duration.ofHours(1))
                                .build(),
                        message("short"),
                        () -> "x"))
                .isInstanceOf(ReconciliationRequiredException.class);
        advance(Duration.ofDays(2));
        assertThat(reconciling
                        .execute(
                                definition(IdempotencyMode.LEASE)
                                        .reconcileAfter(Duration.ZERO)
                                        .build(),
                                message("off"),
                                () -> "x")
                        .outcome())
                .isEqualTo(MessageOutcome.PROCESSED);
    }

    @Test
    void withoutAWindowNothingIsMarked() throws Exception {
        crashedClaim("order-1");
        advance(Duration.ofDays(30));

        assertThat(executor.execute(lease(), message("order-1"), () -> "x").outcome())
                .isEqualTo(MessageOutcome.PROCESSED);
    }

    @Test
    void theAnnotationCarriesTheWindowAndTheBudget() throws Exception {
        class Handlers {
            @IdempotentHandler(budget = "stripe", reconcileAfter = "24h")
            void charge() {}

            @IdempotentHandler
            void plain() {}
        }
        HandlerDefinition charge = HandlerDefaults.standard()
                .resolve(
                        Handlers.class.getDeclaredMethod("charge").getAnnotation(IdempotentHandler.class),
                        "charges",
                        false,
                        "charge");
        HandlerDefinition plain = HandlerDefaults.standard()
                .resolve(
                        Handlers.class.getDeclaredMethod("plain").getAnnotation(IdempotentHandler.class),
                        "plain",
                        false,
                        "plain");

        assertThat(charge.budget()).isEqualTo("stripe");
        assertThat(charge.reconcileAfter()).isEqualTo(STRIPE_WINDOW);
        assertThat(plain.budget()).isNull();
        assertThat(plain.reconcileAfter()).isNull();
    }
}
