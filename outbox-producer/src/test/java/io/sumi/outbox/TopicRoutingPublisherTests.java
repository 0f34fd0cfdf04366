package io.sumi.outbox;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Rows go to their topic's publisher; a topic nobody takes and a publisher that throws fail only their rows. */
class TopicRoutingPublisherTests {

    static OutboxRecord record(long id, String topic) {
        return new OutboxRecord(id, "a", topic, "p", Map.of(), Instant.EPOCH, Instant.EPOCH, null, 0, null, null, null);
    }

    @Test
    void eachRowGoesToItsTopicsPublisherAndAnUnknownTopicFailsItsRowsOnly() {
        RecordingPublisher rabbit = new RecordingPublisher();
        RecordingPublisher kafka = new RecordingPublisher();
        TopicRoutingPublisher routing = TopicRoutingPublisher.of(Map.of("mail.send", rabbit), kafka);

        PublishResult result =
                routing.publish(List.of(record(1, "mail.send"), record(2, "orders")), Duration.ofSeconds(5));

        assertThat(result.failures()).isEmpty();
        assertThat(rabbit.sentIds()).containsExactly(1L);
        assertThat(kafka.sentIds()).containsExactly(2L);

        TopicRoutingPublisher noFallback = TopicRoutingPublisher.of(Map.of("mail.send", rabbit), null);
        PublishResult partial = noFallback.publish(List.of(record(3, "mail.send"), record(4, "orders")));
        assertThat(partial.failures()).containsOnlyKeys(4L);
        assertThat(partial.failures().get(4L)).hasMessageContaining("'orders'");
    }

    @Test
    void aPublisherThatThrowsFailsItsOwnRowsAndNotTheOthers() {
        RecordingPublisher kafka = new RecordingPublisher();
        OutboxPublisher broken = records -> {
            throw new IllegalStateException("connection refused");
        };
        TopicRoutingPublisher routing = TopicRoutingPublisher.of(Map.of("mail.send", broken), kafka);

        PublishResult result = routing.publish(List.of(record(1, "mail.send"), record(2, "orders")));

        assertThat(result.failures()).containsOnlyKeys(1L);
        assertThat(kafka.sentIds()).containsExactly(2L);
    }
}
