package io.sumi.consumer.messaging;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

import io.sumi.consumer.HandlerReply;
import io.sumi.consumer.HandlerResult;
import io.sumi.consumer.MessageOutcome;
import io.sumi.store.StoredReply;
import java.lang.reflect.Method;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.messaging.Message;
import org.springframework.messaging.MessageHeaders;
import org.springframework.messaging.support.MessageBuilder;
import org.springframework.util.MimeTypeUtils;

/** What a kept reply looks like after a round trip through the ledger's form. */
class MessageReplyCodecTests {

    record Quote(String id, long cents) {}

    /** Stand-ins for listener methods, for their declared return types. */
    interface Listeners {
        String text();

        byte[] bytes();

        Quote quote();

        Message<Quote> quoteMessage();

        void nothing();
    }

    final MessageReplyCodec codec = MessageReplyCodec.withDefaultConverter("kafka_");

    static Method method(String name) throws NoSuchMethodException {
        return Listeners.class.getMethod(name);
    }

    Object roundTrip(Object reply, String method) throws Exception {
        HandlerReply encoded = codec.encode(reply);
        assertThat(encoded.value()).isSameAs(reply);
        StoredReply stored = java.util.Objects.requireNonNull(encoded.stored());
        // What the ledger gives back is a new object with the same bytes.
        StoredReply fromLedger = new StoredReply(stored.payload(), stored.headers());
        return codec.listenerResult(
                new HandlerResult<>(MessageOutcome.DUPLICATE, HandlerReply.stored(fromLedger)), method(method));
    }

    @Test
    void textAndBytesComeBackAsTheyWere() throws Exception {
        assertThat(roundTrip("pong ✓", "text")).isEqualTo("pong ✓");
        assertThat(roundTrip(new byte[] {0, 1, (byte) 0xff}, "bytes")).isEqualTo(new byte[] {0, 1, (byte) 0xff});
    }

    @Test
    void anObjectComesBackAsTheDeclaredTypeThroughJson() throws Exception {
        assertThat(roundTrip(new Quote("q-1", 4200), "quote")).isEqualTo(new Quote("q-1", 4200));
    }

    @Test
    void aMessageKeepsItsOwnHeadersButNotTheRequestsOrTheTransports() throws Exception {
        Message<Quote> reply = MessageBuilder.withPayload(new Quote("q-2", 1))
                .setHeader("reply-note", "kept")
                .setHeader("kafka_correlationId", "from-the-first-request")
                .setHeader("kafka_topic", "first-requester-replies")
                .setHeader(MessageHeaders.CONTENT_TYPE, MimeTypeUtils.APPLICATION_JSON)
                .setHeader("not-text", 42)
                .build();

        Object back = roundTrip(reply, "quoteMessage");

        assertThat(back).isInstanceOfSatisfying(Message.class, message -> {
            assertThat(message.getPayload()).isEqualTo(new Quote("q-2", 1));
            assertThat(message.getHeaders())
                    .containsEntry("reply-note", "kept")
                    .containsEntry(MessageHeaders.CONTENT_TYPE, "application/json")
                    .doesNotContainKeys(
                            "kafka_correlationId", "kafka_topic", "not-text", MessageReplyCodec.KIND_HEADER);
        });
    }

    @Test
    void theHandlersOwnReplyGoesOutUntouchedAndNoReplyIsNull() throws Exception {
        Quote quote = new Quote("q-3", 3);
        HandlerReply encoded = codec.encode(quote);

        assertThat(codec.listenerResult(new HandlerResult<>(MessageOutcome.PROCESSED, encoded), method("quote")))
                .isSameAs(quote);
        assertThat(codec.encode(null).stored()).isNull();
        assertThat(codec.listenerResult(new HandlerResult<>(MessageOutcome.DUPLICATE, null), method("quote")))
                .isNull();
    }

    @Test
    void anObjectWithoutAConverterIsRefusedNotDropped() {
        MessageReplyCodec bare = new MessageReplyCodec(null, List.of("kafka_"));

        assertThatIllegalStateException()
                .isThrownBy(() -> bare.encode(new Quote("q-4", 4)))
                .withMessageContaining("no message converter");
    }

    @Test
    void aMethodThatReturnsNothingCannotKeepAReply() {
        assertThatIllegalStateException()
                .isThrownBy(() -> MessageReplyCodec.requireReply(method("nothing")))
                .withMessageContaining("returns nothing");
    }
}
