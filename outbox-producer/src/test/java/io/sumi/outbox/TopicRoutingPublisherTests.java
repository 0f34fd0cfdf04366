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

    /**
     * The dispatcher interrupts a publisher that outlives the send timeout. Whichever share runs on
     * the calling thread, the interrupt ends the wait: the share still blocked is interrupted in
     * turn and its rows fail, the share that was acknowledged stays acknowledged, and the interrupt
     * is kept for the caller.
     */
    @Test
    void anInterruptAtTheDeadlineFailsTheSharesStillRunningOnlyAndIsKept() throws Exception {
        BlockingBroker hanging = new BlockingBroker(record -> true);
        java.util.concurrent.CountDownLatch healthyReturned = new java.util.concurrent.CountDownLatch(1);
        RecordingPublisher healthy = new RecordingPublisher() {
            @Override
            public PublishResult publish(List<OutboxRecord> records) {
                PublishResult result = super.publish(records);
                healthyReturned.countDown();
                return result;
            }
        };
        TopicRoutingPublisher routing = TopicRoutingPublisher.of(Map.of("mail.send", healthy), hanging);
        java.util.concurrent.atomic.AtomicReference<PublishResult> result =
                new java.util.concurrent.atomic.AtomicReference<>();
        java.util.concurrent.atomic.AtomicBoolean keptInterrupt = new java.util.concurrent.atomic.AtomicBoolean();
        Thread caller = new Thread(() -> {
            result.set(routing.publish(List.of(record(1, "orders"), record(2, "mail.send")), Duration.ofSeconds(30)));
            keptInterrupt.set(Thread.currentThread().isInterrupted());
        });
        caller.start();
        org.awaitility.Awaitility.await().until(() -> !hanging.inFlight.isEmpty());
        healthyReturned.await();

        caller.interrupt();
        caller.join();

        assertThat(result.get().failures()).containsOnlyKeys(1L);
        assertThat(healthy.sentIds()).containsExactly(2L);
        assertThat(keptInterrupt).isTrue();
        org.awaitility.Awaitility.await().until(() -> hanging.interrupted.get() == 1);
        assertThat(hanging.deliveries(1)).isZero();
    }
}
