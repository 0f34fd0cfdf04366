package io.sumi.examples.mail.demo;

import io.sumi.outbox.OutboxPublisher;
import io.sumi.outbox.OutboxRecord;
import io.sumi.outbox.PublishResult;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.utils.Utils;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.kafka.core.KafkaTemplate;

/**
 * Publishes copies of mail requests the outbox dispatcher has sent, with the same key, payload
 * and headers (so the same {@code outbox-id}), through the application's own {@link KafkaTemplate}:
 * what a producer retry after a lost acknowledgement, a replay, or the outbox's own at-least-once
 * delivery puts on the topic. The outbox alone sends a row twice only after a failure, so the demo
 * makes the duplicates itself, to show that the consumer sends each mail once all the same.
 *
 * <p>Which mail requests are copied, and how, is the {@link DemoPlan}'s {@link DemoPlan.Copy}
 * per order: a concurrent copy goes to the partition after the original's at once (two consumer
 * threads then race on the key); a later copy goes to the planned partition after its delay.
 * It sees the dispatcher's sends through {@link CopyingPublisher}, which wraps the outbox's
 * publisher; copies are sent on threads of their own, so they do not slow the dispatcher down.
 */
public class BrokerCopies implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(BrokerCopies.class);

    /** Publishes one copy; Kafka's template by default, a RabbitTemplate in the rabbitmq mode. */
    @FunctionalInterface
    public interface CopySender {
        java.util.concurrent.CompletableFuture<?> send(ProducerRecord<String, String> copy);

        default void flush() {}
    }

    private final CopySender template;
    private final String topic;
    private final int partitions;
    private final ExecutorService immediate = Executors.newSingleThreadExecutor(daemon("demo-copies"));
    private final ScheduledExecutorService delayed =
            Executors.newSingleThreadScheduledExecutor(daemon("demo-late-copies"));
    private volatile Map<String, DemoPlan.Copy> plan = Map.of();
    private final Set<String> copied = ConcurrentHashMap.newKeySet();
    private final AtomicInteger pending = new AtomicInteger();
    private final AtomicInteger concurrentSent = new AtomicInteger();
    private final AtomicInteger lateSent = new AtomicInteger();
    private final AtomicReference<Throwable> failure = new AtomicReference<>();

    public BrokerCopies(KafkaTemplate<String, String> template, String topic, int partitions) {
        this(
                new CopySender() {
                    @Override
                    public java.util.concurrent.CompletableFuture<?> send(ProducerRecord<String, String> copy) {
                        return template.send(copy);
                    }

                    @Override
                    public void flush() {
                        template.flush();
                    }
                },
                topic,
                partitions);
    }

    public BrokerCopies(CopySender template, String topic, int partitions) {
        this.template = template;
        this.topic = topic;
        this.partitions = partitions;
    }

    /** The copies to make from now on, by order id (the outbox aggregate id). */
    public void plan(Map<String, DemoPlan.Copy> copies) {
        this.plan = Map.copyOf(copies);
    }

    /** Called with every batch the dispatcher published: copies what the plan names and was acknowledged. */
    void published(List<OutboxRecord> records, PublishResult result) {
        List<ProducerRecord<String, String>> now = new ArrayList<>();
        for (OutboxRecord record : records) {
            DemoPlan.Copy copy = plan.get(record.aggregateId());
            if (copy == null
                    || !topic.equals(record.topic())
                    || !result.sent(record.id())
                    || !copied.add(record.aggregateId())) {
                continue;
            }
            pending.incrementAndGet();
            if (copy.concurrent()) {
                now.add(copyOf(record, (partitionOf(record.aggregateId()) + 1) % partitions));
            } else {
                ProducerRecord<String, String> later = copyOf(record, copy.partition());
                // send() counts its own failures; the schedule's future adds nothing to them.
                ScheduledFuture<?> unused = delayed.schedule(
                        () -> send(List.of(later), lateSent), copy.delayMillis(), TimeUnit.MILLISECONDS);
            }
        }
        if (!now.isEmpty()) {
            immediate.execute(() -> send(now, concurrentSent));
        }
    }

    private ProducerRecord<String, String> copyOf(OutboxRecord record, int partition) {
        ProducerRecord<String, String> copy =
                new ProducerRecord<>(topic, partition, record.aggregateId(), record.payload());
        record.brokerHeaders()
                .forEach((name, value) ->
                        copy.headers().add(new RecordHeader(name, value.getBytes(StandardCharsets.UTF_8))));
        return copy;
    }

    /** The partition Kafka's default partitioner gives a key: where the dispatcher's send went. */
    private int partitionOf(String key) {
        return Utils.toPositive(Utils.murmur2(key.getBytes(StandardCharsets.UTF_8))) % partitions;
    }

    private void send(List<ProducerRecord<String, String>> records, AtomicInteger sent) {
        for (ProducerRecord<String, String> record : records) {
            try {
                CompletableFuture<?> unused = template.send(record).whenComplete((result, ex) -> {
                    if (ex == null) {
                        sent.incrementAndGet();
                    } else {
                        failed(ex);
                    }
                    pending.decrementAndGet();
                });
            } catch (RuntimeException ex) {
                failed(ex);
                pending.decrementAndGet();
            }
        }
        // Out at once, not after linger.ms: the copies are meant to meet their originals.
        template.flush();
    }

    private void failed(Throwable ex) {
        if (failure.compareAndSet(null, ex)) {
            log.error("Publishing a copy failed", ex);
        }
    }

    /** Whether every copy planned so far has been sent (or has failed). */
    public boolean idle() {
        return pending.get() == 0;
    }

    /** Copies sent at once to the partition after the original's. */
    public int concurrentCopies() {
        return concurrentSent.get();
    }

    /** Copies sent later. */
    public int lateCopies() {
        return lateSent.get();
    }

    /** The first failed copy, if any. */
    public Throwable failure() {
        return failure.get();
    }

    @Override
    public void close() {
        delayed.shutdownNow();
        immediate.shutdownNow();
    }

    private static java.util.concurrent.ThreadFactory daemon(String name) {
        return runnable -> {
            Thread thread = new Thread(runnable, name);
            thread.setDaemon(true);
            return thread;
        };
    }

    /**
     * The outbox's publisher, as the dispatcher sees it in the demo: the starter's Kafka publisher,
     * and after each batch the copies of {@link BrokerCopies}. Nothing changes for the rows: what
     * the Kafka publisher reports is what the dispatcher records.
     */
    // close() throws Exception like the publisher it wraps; an interruption while stopping is
    // reported to the caller as it is.
    @SuppressWarnings("try")
    static final class CopyingPublisher implements OutboxPublisher, AutoCloseable {

        private final OutboxPublisher delegate;
        private final ObjectProvider<BrokerCopies> copies;

        CopyingPublisher(OutboxPublisher delegate, ObjectProvider<BrokerCopies> copies) {
            this.delegate = delegate;
            this.copies = copies;
        }

        @Override
        public PublishResult publish(List<OutboxRecord> records) {
            return copied(records, delegate.publish(records));
        }

        /** Forwards the deadline too: the delegate (the starter's Kafka publisher) bounds its own sends by it. */
        @Override
        public PublishResult publish(List<OutboxRecord> records, Duration timeout) {
            return copied(records, delegate.publish(records, timeout));
        }

        private PublishResult copied(List<OutboxRecord> records, PublishResult result) {
            try {
                copies.ifAvailable(c -> c.published(records, result));
            } catch (RuntimeException ex) {
                log.error("Could not plan the copies of a published batch", ex);
            }
            return result;
        }

        @Override
        public void close() throws Exception {
            if (delegate instanceof AutoCloseable closeable) {
                closeable.close();
            }
        }
    }
}
