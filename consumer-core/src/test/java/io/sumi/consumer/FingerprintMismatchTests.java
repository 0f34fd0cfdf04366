package io.sumi.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sumi.consumer.exception.FingerprintMismatchException;
import io.sumi.store.MessageStatus;
import io.sumi.store.ProcessedMessage;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A key that arrives again with another payload means a producer reused the key: it is counted and
 * logged, and either treated as the key says ({@code WARN}) or rejected ({@code REJECT}).
 */
class FingerprintMismatchTests extends H2ExecutorTestSupport {

    private HandlerDefinition definition(IdempotencyMode mode, FingerprintMismatchPolicy policy) {
        return definition(mode).fingerprintPolicy(policy).build();
    }

    @ParameterizedTest
    @EnumSource(
            value = IdempotencyMode.class,
            names = {"LEASE", "TRANSACTIONAL"})
    void warnCountsTheMismatchAndTreatsTheMessageAsADuplicate(IdempotencyMode mode) throws Exception {
        HandlerDefinition handler = definition(mode, FingerprintMismatchPolicy.WARN);
        executor.execute(handler, message("order-1", "amount=10"), () -> "first");
        AtomicInteger calls = new AtomicInteger();

        HandlerResult<Integer> result =
                executor.execute(handler, message("order-1", "amount=99"), calls::incrementAndGet);

        assertThat(result.outcome()).isEqualTo(MessageOutcome.DUPLICATE);
        assertThat(calls).hasValue(0);
        assertThat(counter("sumi.fingerprint.mismatches")).isEqualTo(1.0);
        assertThat(messages("duplicate")).isEqualTo(1.0);
        assertThat(messages("rejected")).isZero();
        assertThat(row("order-1").orElseThrow().fingerprint())
                .as("the ledger keeps the first payload's fingerprint")
                .isEqualTo(Fingerprints.of("amount=10"));
    }

    @ParameterizedTest
    @EnumSource(
            value = IdempotencyMode.class,
            names = {"LEASE", "TRANSACTIONAL"})
    void rejectThrowsANonRetryableExceptionAndNeverRunsTheHandler(IdempotencyMode mode) throws Exception {
        HandlerDefinition handler = definition(mode, FingerprintMismatchPolicy.REJECT);
        executor.execute(handler, message("order-1", "amount=10"), () -> "first");
        AtomicInteger calls = new AtomicInteger();

        assertThatThrownBy(() -> executor.execute(handler, message("order-1", "amount=99"), calls::incrementAndGet))
                .isInstanceOfSatisfying(
                        FingerprintMismatchException.class,
                        ex -> assertThat(ex.isRetryable()).isFalse())
                .hasMessageContaining("order-1")
                .hasMessageContaining(consumer)
                .hasMessageContaining("reused the key");

        assertThat(calls).hasValue(0);
        assertThat(counter("sumi.fingerprint.mismatches")).isEqualTo(1.0);
        assertThat(messages("rejected")).isEqualTo(1.0);
        assertThat(messages("duplicate")).isZero();
        assertThat(status("order-1")).isEqualTo(MessageStatus.COMPLETED);
    }

    @Test
    void samePayloadAgainIsAPlainDuplicate() throws Exception {
        HandlerDefinition handler = definition(IdempotencyMode.LEASE, FingerprintMismatchPolicy.REJECT);
        executor.execute(handler, message("order-1", "amount=10"), () -> "first");

        HandlerResult<String> result = executor.execute(handler, message("order-1", "amount=10"), () -> "second");

        assertThat(result.outcome()).isEqualTo(MessageOutcome.DUPLICATE);
        assertThat(counter("sumi.fingerprint.mismatches")).isZero();
    }

    @Test
    void payloadsWithoutAFingerprintAreNeverCompared() throws Exception {
        record Order(String id, int amount) {}
        HandlerDefinition handler = definition(IdempotencyMode.LEASE, FingerprintMismatchPolicy.REJECT);
        executor.execute(handler, message("order-1", new Order("o1", 10)), () -> "first");

        HandlerResult<String> result =
                executor.execute(handler, message("order-1", new Order("o1", 99)), () -> "second");

        assertThat(result.outcome()).isEqualTo(MessageOutcome.DUPLICATE);
        assertThat(row("order-1").orElseThrow().fingerprint()).isNull();
        assertThat(counter("sumi.fingerprint.mismatches")).isZero();
    }

    @Test
    void warnRunsTheRetryOfAFailedMessageThatCameBackWithAnotherPayload() throws Exception {
        HandlerDefinition handler = definition(IdempotencyMode.LEASE, FingerprintMismatchPolicy.WARN);
        assertThatThrownBy(() -> executor.execute(handler, message("order-1", "amount=10"), () -> {
                    throw new IllegalStateException("first try fails");
                }))
                .isInstanceOf(IllegalStateException.class);
        AtomicInteger calls = new AtomicInteger();

        HandlerResult<Integer> retry =
                executor.execute(handler, message("order-1", "amount=99"), calls::incrementAndGet);

        assertThat(retry.outcome()).isEqualTo(MessageOutcome.PROCESSED);
        assertThat(calls).hasValue(1);
        assertThat(counter("sumi.fingerprint.mismatches")).isEqualTo(1.0);
    }

    @Test
    void rejectReleasesATakenOverClaimSoTheGenuineMessageCanStillRun() throws Exception {
        HandlerDefinition handler = definition(IdempotencyMode.LEASE, FingerprintMismatchPolicy.REJECT);
        assertThatThrownBy(() -> executor.execute(handler, message("order-1", "amount=10"), () -> {
                    throw new IllegalStateException("first try fails");
                }))
                .isInstanceOf(IllegalStateException.class);
        AtomicInteger calls = new AtomicInteger();

        assertThatThrownBy(() -> executor.execute(handler, message("order-1", "amount=99"), calls::incrementAndGet))
                .isInstanceOf(FingerprintMismatchException.class);
        ProcessedMessage afterReject = row("order-1").orElseThrow();
        HandlerResult<Integer> genuine =
                executor.execute(handler, message("order-1", "amount=10"), calls::incrementAndGet);

        assertThat(afterReject.status()).isEqualTo(MessageStatus.IN_PROGRESS);
        assertReleasedAtOnce(afterReject);
        assertThat(genuine.outcome()).isEqualTo(MessageOutcome.PROCESSED);
        assertThat(calls).hasValue(1);
        assertThat(messages("rejected")).isEqualTo(1.0);
    }

    @Test
    void defaultPolicyIsWarn() {
        HandlerDefinition handler = definition(IdempotencyMode.LEASE)
                .fingerprintPolicy(FingerprintMismatchPolicy.DEFAULT)
                .build();

        assertThat(handler.fingerprintPolicy()).isEqualTo(FingerprintMismatchPolicy.WARN);
    }
}
