package io.sumi.outbox;

import java.time.Duration;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * An {@link OutboxPublisher} that hands each row to the publisher of its topic: some topics to
 * RabbitMQ, the others to Kafka, for instance. Rows of a topic no publisher takes fail with an
 * {@link IllegalStateException} that names the topic (they are retried and then parked, never
 * lost). The publishers are called one after the other with what is left of the batch's timeout;
 * an exception of one fails its rows only. Thread-safe if its publishers are.
 */
public final class TopicRoutingPublisher implements OutboxPublisher {

    private final Map<String, OutboxPublisher> byTopic;
    private final @Nullable OutboxPublisher fallback;

    private TopicRoutingPublisher(Map<String, OutboxPublisher> byTopic, @Nullable OutboxPublisher fallback) {
        this.byTopic = Map.copyOf(byTopic);
        this.fallback = fallback;
    }

    /**
     * @param byTopic the publisher of each listed topic
     * @param fallback the publisher of every other topic, or {@code null} for none
     */
    public static TopicRoutingPublisher of(Map<String, OutboxPublisher> byTopic, @Nullable OutboxPublisher fallback) {
        return new TopicRoutingPublisher(Objects.requireNonNull(byTopic, "byTopic"), fallback);
    }

    /** The publisher of {@code topic}, or {@code null}. */
    public @Nullable OutboxPublisher publisherOf(String topic) {
        OutboxPublisher publisher = byTopic.get(topic);
        return publisher != null ? publisher : fallback;
    }

    @Override
    public PublishResult publish(List<OutboxRecord> records) {
        return route(records, null);
    }

    @Override
    public PublishResult publish(List<OutboxRecord> records, Duration timeout) {
        return route(records, timeout);
    }

    private PublishResult route(List<OutboxRecord> records, @Nullable Duration timeout) {
        long deadline = timeout == null ? 0 : System.nanoTime() + timeout.toNanos();
        Map<OutboxPublisher, List<OutboxRecord>> groups = new IdentityHashMap<>();
        Map<Long, Throwable> failures = new LinkedHashMap<>();
        for (OutboxRecord record : records) {
            OutboxPublisher publisher = publisherOf(record.topic());
            if (publisher == null) {
                failures.put(
                        record.id(),
                        new IllegalStateException(
                                "No outbox publisher for topic '" + record.topic()
                                        + "': route it to one (sumi.outbox.rabbit.topics, or a Kafka publisher for the other topics)"));
            } else {
                groups.computeIfAbsent(publisher, p -> new ArrayList<>()).add(record);
            }
        }
        for (Map.Entry<OutboxPublisher, List<OutboxRecord>> group : groups.entrySet()) {
            List<OutboxRecord> batch = group.getValue();
            try {
                PublishResult result;
                if (timeout == null) {
                    result = group.getKey().publish(batch);
                } else {
                    long left = deadline - System.nanoTime();
                    result = group.getKey().publish(batch, Duration.ofNanos(Math.max(1, left)));
                }
                failures.putAll(result.failures());
            } catch (RuntimeException ex) {
                batch.forEach(record -> failures.put(record.id(), ex));
            }
        }
        return failures.isEmpty() ? PublishResult.allSent() : PublishResult.failed(failures);
    }
}
