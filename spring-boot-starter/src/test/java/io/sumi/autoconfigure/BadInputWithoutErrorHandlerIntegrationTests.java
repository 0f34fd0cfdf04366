package io.sumi.autoconfigure;

import io.sumi.consumer.FingerprintMismatchException;
import io.sumi.consumer.InvalidIdempotencyKeyException;
import io.sumi.consumer.MissingIdempotencyKeyException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.annotation.Import;
import org.springframework.kafka.support.serializer.DeserializationException;
import org.springframework.kafka.test.context.EmbeddedKafka;

/**
 * The bad-input table in an application that defines no error-handler bean, so every container
 * runs with Spring Kafka's default ({@code DefaultErrorHandler}: 10 attempts, then a recoverer that
 * logs the record at ERROR and commits past it). Sumi's refusals must still be refused at once
 * (not retried ten times), the log must say what is wrong, and the neighbours must be processed
 * exactly once. See {@link BadInputTableSupport} for what every row checks.
 */
@SpringBootTest(classes = BadInputWithoutErrorHandlerIntegrationTests.App.class, properties = {
        "spring.kafka.consumer.auto-offset-reset=earliest",
        "spring.kafka.listener.concurrency=1",
        "spring.flyway.locations=classpath:db/sumi/{vendor}",
        "sumi.kafka.busy-retry-interval=100ms",
        "sumi.kafka.busy-max-wait=5s"})
@EmbeddedKafka(partitions = 1, bootstrapServersProperty = "spring.kafka.bootstrap-servers")
@ExtendWith(OutputCaptureExtension.class)
class BadInputWithoutErrorHandlerIntegrationTests extends BadInputTableSupport {

    static final String VARIANT = "noeh";

    @Override
    String variant() {
        return VARIANT;
    }

    static String key(String row, String suffix) {
        return VARIANT + "-" + row + "-" + suffix;
    }

    static Stream<Row> rows() {
        byte[] prefix = key("utf8", "").getBytes(StandardCharsets.UTF_8);
        return Stream.of(
                new Row("no key header", "nokey", List.of(Sent.rejected((String) null, "no key here")),
                        new Expected(Goes.LOGGED_AND_SKIPPED, MissingIdempotencyKeyException.class,
                                List.of("No idempotency key", "outbox-id", "@IdempotentHandler(key"))),
                new Row("empty key header", "empty", List.of(Sent.rejected("", "empty key")),
                        new Expected(Goes.LOGGED_AND_SKIPPED, MissingIdempotencyKeyException.class,
                                List.of("No idempotency key", "outbox-id", "empty or blank", "@IdempotentHandler(key"))),
                new Row("201-character key (the column takes 200)", "long", List.of(Sent.rejected(longKey(), "long key")),
                        new Expected(Goes.LOGGED_AND_SKIPPED, InvalidIdempotencyKeyException.class,
                                List.of("201 characters", "at most 200", "not truncated", "@IdempotentHandler(key"))),
                new Row("invalid UTF-8 bytes in the key header", "utf8",
                        List.of(Sent.rejected(BadInputWithDeadLetterTopicIntegrationTests.concat(prefix, (byte) 0xFF), "first binary key"),
                                Sent.rejected(BadInputWithDeadLetterTopicIntegrationTests.concat(prefix, (byte) 0xFE), "second binary key")),
                        new Expected(Goes.LOGGED_AND_SKIPPED, InvalidIdempotencyKeyException.class,
                                List.of("not valid UTF-8", "Send the key as UTF-8 text (e.g. hex or Base64"))),
                new Row("key containing NUL", "nul", List.of(Sent.rejected(key("nul", "a\u0000b"), "nul key")),
                        new Expected(Goes.LOGGED_AND_SKIPPED, InvalidIdempotencyKeyException.class,
                                List.of("NUL character (U+0000)", "rejected, not altered", "hex or Base64"))),
                new Row("key with a trailing space (another key than without)", "space",
                        List.of(Sent.runs(key("space", "k"), "without space"), Sent.runs(key("space", "k "), "with space")),
                        Expected.processed()),
                new Row("same key, another payload (fingerprint-mismatch = REJECT)", "fp-reject",
                        List.of(Sent.runs(key("fp-reject", "k"), "first payload"), Sent.rejected(key("fp-reject", "k"), "other payload")),
                        new Expected(Goes.LOGGED_AND_SKIPPED, FingerprintMismatchException.class,
                                List.of("another payload", "reused the key"))),
                new Row("same key, another payload (default policy WARN)", "fp-default",
                        List.of(Sent.runs(key("fp-default", "k"), "first payload"), Sent.rejected(key("fp-default", "k"), "other payload")),
                        new Expected(Goes.ACKED_AS_DUPLICATE, null,
                                List.of("arrived with another payload", "treating it as the same message"))),
                new Row("unreadable payload (JSON, ErrorHandlingDeserializer)", "json",
                        List.of(Sent.rejected(key("json", "bad"), "{not json")),
                        new Expected(Goes.LOGGED_AND_SKIPPED, DeserializationException.class, List.of("failed to deserialize"))));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("rows")
    void badInput(Row row, CapturedOutput output) throws Exception {
        check(row, output);
    }

    static String longKey() {
        String start = key("long", "");
        return start + "x".repeat(201 - start.length());
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(Common.class)
    static class App {
    }
}
