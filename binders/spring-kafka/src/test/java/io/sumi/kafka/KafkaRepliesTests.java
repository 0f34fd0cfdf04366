package io.sumi.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;
import static org.assertj.core.api.Assertions.assertThatNoException;

import io.sumi.store.StoredReply;
import java.util.List;
import java.util.Objects;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.junit.jupiter.api.Test;
import org.springframework.messaging.Message;
import org.springframework.messaging.support.MessageBuilder;

/** The start-up check of listeners that keep replies, and what the Kafka codec leaves out. */
class KafkaRepliesTests {

    /** Stand-ins for listener methods. */
    interface Listeners {
        String record(String payload);

        String payloadList(List<String> payloads);

        void nothing(String payload);

        String records(List<ConsumerRecord<String, String>> records);

        String messages(List<Message<String>> messages);

        String consumerRecords(ConsumerRecords<String, String> records);
    }

    static java.lang.reflect.Method method(String name) {
        for (java.lang.reflect.Method method : Listeners.class.getMethods()) {
            if (method.getName().equals(name)) {
                return method;
            }
        }
        throw new IllegalArgumentException(name);
    }

    @Test
    void aRecordListenerThatReturnsAReplyMayKeepIt() {
        assertThatNoException().isThrownBy(() -> KafkaReplies.checkReplying(method("record")));
        // A List payload of one record is not a batch.
        assertThatNoException().isThrownBy(() -> KafkaReplies.checkReplying(method("payloadList")));
    }

    @Test
    void batchListenersAndMethodsWithoutAReplyAreRefused() {
        assertThatIllegalStateException()
                .isThrownBy(() -> KafkaReplies.checkReplying(method("nothing")))
                .withMessageContaining("returns nothing");
        for (String batch : List.of("records", "messages", "consumerRecords")) {
            assertThatIllegalStateException()
                    .isThrownBy(() -> KafkaReplies.checkReplying(method(batch)))
                    .withMessageContaining("batch listener");
        }
    }

    @Test
    void theRequestsKafkaHeadersAreNotKept() {
        Message<String> reply = MessageBuilder.withPayload("pong")
                .setHeader("kafka_correlationId", "first")
                .setHeader("kafka_replyTopic", "first-replies")
                .setHeader("reply-note", "kept")
                .build();

        StoredReply stored =
                Objects.requireNonNull(KafkaReplies.codec().encode(reply).stored());

        assertThat(stored.headers())
                .containsEntry("reply-note", "kept")
                .doesNotContainKeys("kafka_correlationId", "kafka_replyTopic", "id", "timestamp");
    }
}
