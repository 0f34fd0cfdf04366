package io.sumi.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sumi.consumer.HandlerDefinition;
import io.sumi.consumer.MessageKeyResolver;
import io.sumi.consumer.exception.InvalidIdempotencyKeyException;
import io.sumi.kafka.KafkaInboundMessage;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;

/**
 * Kafka header bytes become keys losslessly (issue 8, defect 8): two different binary keys must
 * not decode to one string with replacement characters (the second record would be skipped as a
 * duplicate); they are rejected, not retryable, whether read as a key header or through
 * {@code #headers} in a key expression.
 */
class KafkaBinaryKeyHeaderTests {

    private static final byte[] BINARY_1 = {(byte) 0xC3, (byte) 0x28};
    private static final byte[] BINARY_2 = {(byte) 0xE2, (byte) 0x28};

    private final MessageKeyResolver resolver = new MessageKeyResolver();

    private static KafkaInboundMessage record(String header, byte[] value) {
        ConsumerRecord<String, String> record = new ConsumerRecord<>("t", 0, 0L, null, "payload");
        record.headers().add(header, value);
        record.headers().add("trace", BINARY_1); // an unrelated binary header must not fail the record
        return new KafkaInboundMessage(record);
    }

    @Test
    void binaryKeyHeadersAreRejectedNotDecodedWithReplacementCharacters() {
        HandlerDefinition handler = HandlerDefinition.builder("c").build();
        for (byte[] key : List.of(BINARY_1, BINARY_2)) {
            assertThatThrownBy(() -> resolver.resolve(handler, record(HandlerDefinition.IDEMPOTENCY_KEY_HEADER, key)))
                    .isInstanceOfSatisfying(
                            InvalidIdempotencyKeyException.class,
                            ex -> assertThat(ex.isRetryable()).isFalse());
        }
    }

    @Test
    void aKeyExpressionOverBinaryHeadersIsRejected() {
        HandlerDefinition handler = HandlerDefinition.builder("c")
                .keyHeaders(List.of())
                .keyExpression("#headers['order']")
                .build();

        assertThatThrownBy(() -> resolver.resolve(handler, record("order", BINARY_2)))
                .isInstanceOf(InvalidIdempotencyKeyException.class);
        assertThat(resolver.resolve(handler, record("order", "注文-7".getBytes(StandardCharsets.UTF_8))))
                .isEqualTo("注文-7");
    }
}
