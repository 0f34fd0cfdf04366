package io.sumi.stream;

import static org.assertj.core.api.Assertions.assertThat;

import io.sumi.consumer.messaging.MessageReplyCodec;
import java.nio.charset.StandardCharsets;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import org.springframework.core.ResolvableType;
import org.springframework.messaging.Message;
import org.springframework.messaging.support.MessageBuilder;

/**
 * The type a kept function output is read back as: the declared output type, {@code byte[]} (the
 * kept bytes as they are) where the declaration does not say.
 */
class ReplyTypeTests {

    record Quote(String item, int price) {}

    interface Quoting extends Function<String, Quote> {}

    interface Messaging extends Function<String, Message<Quote>> {}

    interface Untyped extends Function<String, Object> {}

    interface UntypedMessage extends Function<String, Message<?>> {}

    private static ResolvableType output(Class<?> function) {
        return ResolvableType.forClass(function).as(Function.class).getGeneric(1);
    }

    @Test
    void aKeptRecordIsReadBackAsTheDeclaredOutputType() {
        MessageReplyCodec codec = IdempotentFunctionPostProcessor.replyCodec();
        Quote quote = new Quote("tea", 3);
        Object decoded = codec.decode(
                codec.encode(quote).stored(), IdempotentFunctionPostProcessor.replyType(output(Quoting.class)));
        assertThat(decoded).isEqualTo(quote);

        Message<Quote> message = MessageBuilder.withPayload(quote)
                .setHeader("quote-kind", "message")
                .setHeader("kafka_correlationId", "c1")
                .build();
        Object decodedMessage = codec.decode(
                codec.encode(message).stored(), IdempotentFunctionPostProcessor.replyType(output(Messaging.class)));
        assertThat(decodedMessage).isInstanceOfSatisfying(Message.class, kept -> {
            assertThat(kept.getPayload()).isEqualTo(quote);
            assertThat(kept.getHeaders()).containsEntry("quote-kind", "message");
            assertThat(kept.getHeaders()).doesNotContainKey("kafka_correlationId");
        });
    }

    @Test
    void anUnresolvableOutputTypeGetsTheKeptBytes() {
        MessageReplyCodec codec = IdempotentFunctionPostProcessor.replyCodec();
        Object decoded = codec.decode(
                codec.encode(new Quote("tea", 3)).stored(),
                IdempotentFunctionPostProcessor.replyType(output(Untyped.class)));
        assertThat(decoded)
                .isInstanceOfSatisfying(
                        byte[].class,
                        bytes -> assertThat(new String(bytes, StandardCharsets.UTF_8))
                                .contains("\"item\":\"tea\""));
        Object decodedMessage = codec.decode(
                codec.encode(MessageBuilder.withPayload(new Quote("tea", 3)).build())
                        .stored(),
                IdempotentFunctionPostProcessor.replyType(output(UntypedMessage.class)));
        assertThat(decodedMessage)
                .isInstanceOfSatisfying(
                        Message.class, kept -> assertThat(kept.getPayload()).isInstanceOf(byte[].class));
        // Text stays text whatever the declaration.
        assertThat(codec.decode(
                        codec.encode("tea").stored(), IdempotentFunctionPostProcessor.replyType(output(Untyped.class))))
                .isEqualTo("tea");
    }
}
