package io.sumi.outbox;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Predicate;

/**
 * A broker whose sends block like a Kafka producer's {@code send()} waiting for metadata that
 * never comes: a record the {@code hangs} predicate picks blocks until {@link #release()} or until
 * the sending thread is interrupted. It knows nothing of deadlines (it uses the default
 * {@link OutboxPublisher#publish(List, java.time.Duration)}). Thread-safe, not serialized: two
 * dispatchers send through it at once. Counts deliveries per row id and notices when two threads
 * are sending the same row at the same moment.
 */
class BlockingBroker implements OutboxPublisher {

    final Map<Long, AtomicInteger> deliveries = new ConcurrentHashMap<>();
    final Set<Long> inFlight = ConcurrentHashMap.newKeySet();
    final Set<Long> sentConcurrently = ConcurrentHashMap.newKeySet();
    final AtomicInteger interrupted = new AtomicInteger();
    private final Predicate<OutboxRecord> hangs;
    private final CountDownLatch released = new CountDownLatch(1);

    BlockingBroker(Predicate<OutboxRecord> hangs) {
        this.hangs = hangs;
    }

    void release() {
        released.countDown();
    }

    int deliveries(long id) {
        AtomicInteger count = deliveries.get(id);
        return count == null ? 0 : count.get();
    }

    @Override
    public PublishResult publish(List<OutboxRecord> records) {
        Map<Long, Throwable> failures = new LinkedHashMap<>();
        for (int i = 0; i < records.size(); i++) {
            OutboxRecord record = records.get(i);
            if (!inFlight.add(record.id())) {
                sentConcurrently.add(record.id());
            }
            try {
                if (hangs.test(record)) {
                    released.await();
                }
                deliveries
                        .computeIfAbsent(record.id(), id -> new AtomicInteger())
                        .incrementAndGet();
            } catch (InterruptedException ex) {
                // Like Kafka's InterruptException: this and every later record of the batch fail.
                interrupted.incrementAndGet();
                Thread.currentThread().interrupt();
                for (OutboxRecord rest : records.subList(i, records.size())) {
                    failures.put(rest.id(), new IllegalStateException("send interrupted", ex));
                }
                return PublishResult.failed(failures);
            } finally {
                inFlight.remove(record.id());
            }
        }
        return PublishResult.failed(failures);
    }
}
