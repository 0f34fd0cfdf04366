package io.sumi.outbox;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * A publisher that records what it sends and fails the records a function picks; with
 * {@link #through} it sends the others through a real broker's publisher and records as sent only
 * what the broker acknowledged.
 */
class RecordingPublisher implements OutboxPublisher {

    private @Nullable OutboxPublisher broker;

    final List<OutboxRecord> sent = new ArrayList<>();
    final List<OutboxRecord> attempted = new ArrayList<>();
    private volatile Function<OutboxRecord, @Nullable Throwable> failure = record -> null;

    RecordingPublisher failWith(Function<OutboxRecord, @Nullable Throwable> failure) {
        this.failure = failure;
        return this;
    }

    /** Sends the records it does not fail through {@code broker}. */
    RecordingPublisher through(OutboxPublisher broker) {
        this.broker = broker;
        return this;
    }

    @Override
    public synchronized PublishResult publish(List<OutboxRecord> records) {
        Map<Long, Throwable> failures = new LinkedHashMap<>();
        List<OutboxRecord> passed = new ArrayList<>();
        for (OutboxRecord record : records) {
            attempted.add(record);
            Throwable failed = failure.apply(record);
            if (failed != null) {
                failures.put(record.id(), failed);
            } else {
                passed.add(record);
            }
        }
        PublishResult brokerResult =
                broker == null || passed.isEmpty() ? PublishResult.allSent() : broker.publish(passed);
        for (OutboxRecord record : passed) {
            if (brokerResult.sent(record.id())) {
                sent.add(record);
            } else {
                failures.put(record.id(), brokerResult.failures().get(record.id()));
            }
        }
        return PublishResult.failed(failures);
    }

    synchronized List<OutboxRecord> sent() {
        return List.copyOf(sent);
    }

    synchronized List<Long> sentIds() {
        return sent.stream().map(OutboxRecord::id).toList();
    }

    synchronized List<String> sentPayloads() {
        return sent.stream().map(OutboxRecord::payload).toList();
    }
}
