package io.sumi.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sumi.consumer.exception.InvalidIdempotencyKeyException;
import io.sumi.consumer.exception.MissingIdempotencyKeyException;
import io.sumi.testing.CountingStore;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * Where a message's key comes from ({@code outbox-id}, then {@code idempotency-key}, then the SpEL
 * expression) and what happens when there is none or it does not fit the ledger.
 */
class KeyResolutionTests extends H2ExecutorTestSupport {

    /** A broker record as a binder would hand it over, for {@code #message}. */
    record FakeRecord(String topic, int partition, long offset, String value) {}

    /** A payload as a binder would have converted it, for {@code #payload}. */
    record OrderPlaced(String orderId, String tenant) {}

    private static InboundMessage record(
            FakeRecord source, @Nullable Object payload, Map<String, @Nullable Object> headers) {
        return InboundMessage.of(source, payload, headers);
    }

    private String keyOf(HandlerDefinition handler, InboundMessage message) throws Exception {
        AtomicReference<String> key = new AtomicReference<>();
        executor.execute(handler, message, () -> {
            key.set(IdempotencyContext.current().key());
            return null;
        });
        assertThat(row(key.get()))
                .as("the ledger row is under the resolved key")
                .isPresent();
        return key.get();
    }

    @Test
    void missingKeyFailsClearlyWithoutClaimingOrRunningTheHandler() {
        AtomicInteger calls = new AtomicInteger();

        assertThatThrownBy(() ->
                        executor.execute(lease(), withHeaders("payload", "trace-id", "t-1"), calls::incrementAndGet))
                .isInstanceOfSatisfying(
                        MissingIdempotencyKeyException.class,
                        ex -> assertThat(ex.isRetryable()).isFalse())
                .hasMessageContaining("No idempotency key")
                .hasMessageContaining(consumer)
                .hasMessageContaining("outbox-id")
                .hasMessageContaining("idempotency-key")
                .hasMessageContaining("key expression");

        assertThat(calls).hasValue(0);
        assertThat(counting.roundTrips()).as("nothing claimed").isZero();
        assertThat(ledgerRows()).isZero();
        assertThat(messages("rejected")).isEqualTo(1.0);
    }

    @Test
    void missingKeyInTransactionalModeAlsoClaimsNothing() {
        AtomicInteger calls = new AtomicInteger();

        assertThatThrownBy(() -> executor.execute(transactional(), withHeaders("payload"), calls::incrementAndGet))
                .isInstanceOf(MissingIdempotencyKeyException.class);

        assertThat(calls).hasValue(0);
        assertThat(counting.roundTrips()).isZero();
        assertThat(ledgerRows()).isZero();
    }

    @Test
    void blankHeadersCountAsMissing() {
        assertThatThrownBy(() -> executor.execute(
                        lease(), withHeaders("payload", "outbox-id", "  ", "idempotency-key", ""), () -> null))
                .isInstanceOf(MissingIdempotencyKeyException.class);
    }

    @Test
    void keyExpressionYieldingNullOrBlankIsAMissingKey() {
        HandlerDefinition handler = definition(IdempotencyMode.LEASE)
                .keyExpression("#headers['order-id']")
                .build();
        HandlerDefinition blank =
                definition(IdempotencyMode.LEASE).keyExpression("'  '").build();

        assertThatThrownBy(() -> executor.execute(handler, withHeaders("payload"), () -> null))
                .isInstanceOf(MissingIdempotencyKeyException.class)
                .hasMessageContaining("#headers['order-id']")
                .hasMessageContaining("yielded null");
        assertThatThrownBy(() -> executor.execute(blank, withHeaders("payload"), () -> null))
                .isInstanceOf(MissingIdempotencyKeyException.class)
                .hasMessageContaining("blank");
        assertThat(ledgerRows()).isZero();
    }

    @Test
    void keyExpressionThatFailsIsAMissingKeyWithTheCause() {
        HandlerDefinition handler = definition(IdempotencyMode.LEASE)
                .keyExpression("#payload.orderId")
                .build();

        assertThatThrownBy(() -> executor.execute(handler, withHeaders(null), () -> null))
                .isInstanceOf(MissingIdempotencyKeyException.class)
                .hasMessageContaining("#payload.orderId")
                .hasMessageContaining("failed")
                .hasCauseInstanceOf(org.springframework.expression.ExpressionException.class);
    }

    @Test
    void invalidKeyExpressionFailsValidationUpFront() {
        HandlerDefinition handler =
                definition(IdempotencyMode.LEASE).keyExpression("#payload.(").build();

        assertThatIllegalArgumentException()
                .isThrownBy(() -> executor.keyResolver().validate(handler))
                .withMessageContaining("Invalid key expression")
                .withMessageContaining(consumer);
    }

    @Test
    void keyLongerThanTheLedgerColumnIsRejectedNotTruncated() {
        String tooLong = "k".repeat(store.maxKeyLength() + 1);
        AtomicInteger calls = new AtomicInteger();

        assertThatThrownBy(() -> executor.execute(lease(), message(tooLong), calls::incrementAndGet))
                .isInstanceOfSatisfying(
                        InvalidIdempotencyKeyException.class,
                        ex -> assertThat(ex.isRetryable()).isFalse())
                .hasMessageContaining((store.maxKeyLength() + 1) + " characters")
                .hasMessageContaining("at most " + store.maxKeyLength())
                .hasMessageContaining("not truncated");

        assertThat(calls).hasValue(0);
        assertThat(counting.roundTrips()).isZero();
        assertThat(messages("rejected")).isEqualTo(1.0);
    }

    @Test
    void keyOfExactlyTheColumnLengthIsAccepted() throws Exception {
        String longest = "k".repeat(store.maxKeyLength());

        assertThat(keyOf(lease(), message(longest))).isEqualTo(longest);
    }

    @Test
    void tooLongKeyIsRejectedClearlyEvenByAStoreWithShortKeys() {
        IdempotentExecutor shortKeys =
                IdempotentExecutor.builder(new CountingStore(store, 10)).build();

        assertThatThrownBy(() -> shortKeys.execute(lease(), message("order-12345"), () -> null))
                .isInstanceOf(InvalidIdempotencyKeyException.class)
                .hasMessageContaining("11 characters")
                .hasMessageContaining("order-1234");
    }

    @Test
    void outboxIdWinsOverIdempotencyKeyWhichWinsOverTheExpression() throws Exception {
        HandlerDefinition handler = definition(IdempotencyMode.LEASE)
                .keyExpression("'from-expression'")
                .build();

        assertThat(keyOf(handler, withHeaders("p", "outbox-id", "from-outbox", "idempotency-key", "from-header")))
                .isEqualTo("from-outbox");
        assertThat(keyOf(handler, withHeaders("p", "idempotency-key", "from-header")))
                .isEqualTo("from-header");
        assertThat(keyOf(handler, withHeaders("p", "outbox-id", " ", "idempotency-key", "from-header-2")))
                .as("a blank header is skipped")
                .isEqualTo("from-header-2");
        assertThat(keyOf(handler, withHeaders("p"))).isEqualTo("from-expression");
    }

    @Test
    void configuredHeadersAreTriedInTheirOrder() throws Exception {
        HandlerDefinition handler = definition(IdempotencyMode.LEASE)
                .keyHeaders(List.of("x-request-id", "outbox-id"))
                .build();

        assertThat(keyOf(handler, withHeaders("p", "outbox-id", "o-1", "x-request-id", "r-1")))
                .isEqualTo("r-1");
        assertThat(keyOf(handler, withHeaders("p", "outbox-id", "o-2", "idempotency-key", "ignored")))
                .isEqualTo("o-2");
    }

    @Test
    void byteArrayHeaderValuesAreDecodedAsUtf8() throws Exception {
        byte[] kafkaHeader = "bestellung-übermittelt-42".getBytes(StandardCharsets.UTF_8);

        assertThat(keyOf(lease(), withHeaders("p", "outbox-id", kafkaHeader))).isEqualTo("bestellung-übermittelt-42");
    }

    @Test
    void expressionReadsThePayload() throws Exception {
        HandlerDefinition handler = definition(IdempotencyMode.LEASE)
                .keyExpression("#payload.orderId()")
                .build();

        assertThat(keyOf(handler, withHeaders(new OrderPlaced("o-77", "acme")))).isEqualTo("o-77");
    }

    @Test
    void expressionReadsTheHeaders() throws Exception {
        HandlerDefinition handler = definition(IdempotencyMode.LEASE)
                .keyExpression("#headers['order-id']")
                .build();

        assertThat(keyOf(handler, withHeaders("p", "order-id", "o-88"))).isEqualTo("o-88");
    }

    @Test
    void expressionSeesByteArrayHeadersDecodedAsUtf8() throws Exception {
        // As documented on @IdempotentHandler#key: "#headers (a map of header values, byte arrays decoded as UTF-8)".
        HandlerDefinition handler = definition(IdempotencyMode.LEASE)
                .keyExpression("#headers['tenant'] + ':' + #payload.orderId()")
                .build();
        InboundMessage message =
                withHeaders(new OrderPlaced("o-99", "ignored"), "tenant", "acme".getBytes(StandardCharsets.UTF_8));

        assertThat(keyOf(handler, message)).isEqualTo("acme:o-99");
    }

    @Test
    void expressionReadsTheBrokerRecordAsMessage() throws Exception {
        HandlerDefinition handler = definition(IdempotencyMode.LEASE)
                .keyExpression("#message.topic() + '-' + #message.partition() + '-' + #message.offset()")
                .build();
        FakeRecord source = new FakeRecord("orders", 3, 4711L, "{}");

        assertThat(keyOf(handler, record(source, "{}", Map.of()))).isEqualTo("orders-3-4711");
    }

    @Test
    void expressionResultThatIsNotAStringIsTurnedIntoText() throws Exception {
        HandlerDefinition handler = definition(IdempotencyMode.LEASE)
                .keyExpression("#message.offset()")
                .build();

        assertThat(keyOf(handler, record(new FakeRecord("orders", 0, 12L, "{}"), "{}", Map.of())))
                .isEqualTo("12");
    }

    @Test
    void resolverNeedsNoExecutor() {
        MessageKeyResolver resolver = new MessageKeyResolver();
        HandlerDefinition handler = HandlerDefinition.builder("mail")
                .keyExpression("#payload.toUpperCase()")
                .build();

        assertThat(resolver.resolve(handler, withHeaders("abc"))).isEqualTo("ABC");
        assertThat(resolver.resolve(handler, withHeaders("abc", "idempotency-key", "k-1")))
                .isEqualTo("k-1");
    }
}
