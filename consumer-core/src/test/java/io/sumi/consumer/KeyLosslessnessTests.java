package io.sumi.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sumi.consumer.exception.BatchFailedException;
import io.sumi.consumer.exception.IdempotencyException;
import io.sumi.consumer.exception.InvalidIdempotencyKeyException;
import io.sumi.consumer.messaging.SpringMessageInboundMessage;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.springframework.messaging.support.MessageBuilder;

/**
 * Keys are lossless (issue 8, defect 8): header bytes that are not UTF-8 are rejected, not decoded
 * with replacement characters (two different binary keys would become one, and the second message
 * would be skipped as a duplicate); keys no ledger can store are rejected before the ledger is touched.
 */
class KeyLosslessnessTests extends H2ExecutorTestSupport {

    private final AtomicInteger runs = new AtomicInteger();

    private static final byte[] BINARY_KEY_1 = {(byte) 0xC3, (byte) 0x28, 'a'};
    private static final byte[] BINARY_KEY_2 = {(byte) 0xFF, (byte) 0x28, 'a'};

    @Test
    void twoDifferentBinaryKeysAreRejectedInsteadOfCollidingAsOneString() {
        for (byte[] key : new byte[][] {BINARY_KEY_1, BINARY_KEY_2}) {
            assertThatThrownBy(() -> executor.execute(
                            lease(), withHeaders("payload", "idempotency-key", key), runs::incrementAndGet))
                    .isInstanceOfSatisfying(InvalidIdempotencyKeyException.class, ex -> {
                        assertThat(ex.isRetryable()).isFalse();
                        assertThat(ex).hasMessageContaining("not valid UTF-8").hasMessageContaining("idempotency-key");
                    });
        }
        assertThat(runs).hasValue(0);
        assertThat(ledgerRows()).isZero();
        assertThat(counting.claimAll).hasValue(0);
    }

    @Test
    void validUtf8KeyBytesAreDecoded() throws Exception {
        byte[] key = "注文-1".getBytes(StandardCharsets.UTF_8);
        executor.execute(lease(), withHeaders("payload", "idempotency-key", key), runs::incrementAndGet);
        assertThat(status("注文-1")).isNotNull();
    }

    @Test
    void aSpringMessageWithBinaryKeyHeaderIsRejected() {
        InboundMessage message = new SpringMessageInboundMessage(MessageBuilder.withPayload("payload")
                .setHeader("outbox-id", BINARY_KEY_1)
                .build());

        assertThatThrownBy(() -> executor.execute(lease(), message, runs::incrementAndGet))
                .isInstanceOf(InvalidIdempotencyKeyException.class);
        assertThat(runs).hasValue(0);
    }

    @Test
    void aKeyExpressionOverBinaryHeadersIsRejected() {
        HandlerDefinition handler = definition(IdempotencyMode.LEASE)
                .keyHeaders(java.util.List.of())
                .keyExpression("#headers['tenant-key']")
                .build();

        assertThatThrownBy(() -> executor.execute(
                        handler,
                        withHeaders("payload", "tenant-key", BINARY_KEY_2, "trace", BINARY_KEY_1),
                        runs::incrementAndGet))
                .isInstanceOf(InvalidIdempotencyKeyException.class);
        assertThat(runs).hasValue(0);
    }

    @Test
    void keysNoLedgerCanStoreAreRejectedBeforeTheLedgerIsTouched() {
        HandlerDefinition handler = definition(IdempotencyMode.LEASE)
                .keyHeaders(java.util.List.of())
                .keyExpression("#headers['raw']")
                .build();
        IdempotentExecutor raw = executor;

        for (String key : new String[] {"", "a\u0000b", "lone-\uD800-surrogate"}) {
            assertThatThrownBy(() -> raw.execute(handler, withHeaders("payload", "raw", key), runs::incrementAndGet))
                    .as("key %s", key.replace("\u0000", "\\0"))
                    .isInstanceOfSatisfying(
                            IdempotencyException.class,
                            ex -> assertThat(ex.isRetryable()).isFalse());
            assertThatThrownBy(() -> raw.executeBatch(
                            handler,
                            java.util.List.of(withHeaders("payload", "raw", key)),
                            indexes -> runs.incrementAndGet()))
                    .isInstanceOfSatisfying(
                            BatchFailedException.class,
                            ex -> assertThat(ex.getCause()).isInstanceOf(IdempotencyException.class));
        }
        assertThat(runs).hasValue(0);
        assertThat(counting.claimAll).hasValue(0);
    }
}
