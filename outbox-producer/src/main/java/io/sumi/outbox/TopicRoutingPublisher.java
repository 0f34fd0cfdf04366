package io.sumi.outbox;

import java.time.Duration;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;

/**
 * An {@link OutboxPublisher} that hands each row to the publisher of its topic: some topics to
 * RabbitMQ, the others to Kafka, for instance. Rows of a topic no publisher takes fail with an
 * {@link IllegalStateException} that names the topic (they are retried and then parked, never
 * lost).
 *
 * <p>Each publisher's share of a batch is sent at the same time as the others' (one share on the
 * calling thread, the others on daemon threads of a pool shared by every instance), and each share
 * gets the batch's whole timeout: a broker that is slow or down fails its own rows only, and the
 * rows of a healthy broker in the same batch are acknowledged as if it were alone. An exception of
 * one publisher fails its rows only. A batch whose rows all go to one publisher is sent on the
 * calling thread, with no hand-off.
 *
 * <p>Deadline: {@code publish} returns once every share has returned. If the calling thread is
 * interrupted while it waits (the dispatcher interrupts a publisher that outlives the send
 * timeout, see {@link OutboxPublisher}), the shares still running are interrupted in turn, their
 * rows are reported as failed, and the interrupt is kept for the caller.
 *
 * <p>Thread-safe if its publishers are (shares of one batch run on several threads at once).
 */
public final class TopicRoutingPublisher implements OutboxPublisher {

    /** Where the shares after the first run: grows with the need, threads end after idling a minute. */
    private static final ExecutorService SHARES = sharePool();

    private final Map<String, OutboxPublisher> byTopic;
    private final @Nullable OutboxPublisher fallback;

    private TopicRoutingPublisher(Map<String, OutboxPublisher> byTopic, @Nullable OutboxPublisher fallback) {
        this.byTopic = Map.copyOf(byTopic);
        this.fallback = fallback;
    }

    /**
     * A publisher that hands each record to the publisher of its topic.
     *
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
        IdentityHashMap<OutboxPublisher, List<OutboxRecord>> groups = new IdentityHashMap<>();
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
        List<Map.Entry<OutboxPublisher, List<OutboxRecord>>> shares = new ArrayList<>(groups.entrySet());
        if (shares.isEmpty()) {
            return PublishResult.failed(failures);
        }
        // Every share but the first starts on the pool, then the first runs here: all at once,
        // each bounded by the batch's deadline (not by what the others left of it).
        List<Future<Map<Long, Throwable>>> running = new ArrayList<>(shares.size() - 1);
        for (Map.Entry<OutboxPublisher, List<OutboxRecord>> share : shares.subList(1, shares.size())) {
            running.add(start(share.getKey(), share.getValue(), timeout, deadline));
        }
        Map.Entry<OutboxPublisher, List<OutboxRecord>> first = shares.get(0);
        failures.putAll(publishShare(first.getKey(), first.getValue(), timeout, deadline));
        boolean interrupted = false;
        for (int i = 0; i < running.size(); i++) {
            Future<Map<Long, Throwable>> future = running.get(i);
            List<OutboxRecord> share = shares.get(i + 1).getValue();
            try {
                failures.putAll(interrupted ? cancelled(future, share) : future.get());
            } catch (InterruptedException ex) {
                // The deadline's interrupt (or a stop): stop waiting, interrupt what still runs.
                interrupted = true;
                failures.putAll(cancelled(future, share));
            } catch (ExecutionException ex) {
                failures.putAll(failAll(share, causeOf(ex)));
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
        return failures.isEmpty() ? PublishResult.allSent() : PublishResult.failed(failures);
    }

    private static Future<Map<Long, Throwable>> start(
            OutboxPublisher publisher, List<OutboxRecord> share, @Nullable Duration timeout, long deadline) {
        try {
            return SHARES.submit(() -> publishShare(publisher, share, timeout, deadline));
        } catch (RejectedExecutionException ex) {
            return CompletableFuture.completedFuture(failAll(share, ex));
        }
    }

    /** One publisher's share: its failures; an exception fails every row of the share. */
    private static Map<Long, Throwable> publishShare(
            OutboxPublisher publisher, List<OutboxRecord> share, @Nullable Duration timeout, long deadline) {
        try {
            PublishResult result = timeout == null
                    ? publisher.publish(share)
                    : publisher.publish(share, Duration.ofNanos(Math.max(1, deadline - System.nanoTime())));
            return result.failures();
        } catch (RuntimeException ex) {
            return failAll(share, ex);
        }
    }

    /** A share given up on: interrupted if it still runs, every row failed unless it had already returned. */
    private static Map<Long, Throwable> cancelled(Future<Map<Long, Throwable>> future, List<OutboxRecord> share) {
        if (future.isDone() && !future.isCancelled()) {
            try {
                return future.get();
            } catch (ExecutionException ex) {
                return failAll(share, causeOf(ex));
            } catch (InterruptedException ex) {
                // Cannot happen for a done future; settled below as not acknowledged.
            }
        }
        future.cancel(true);
        return failAll(share, new TimeoutException("Not acknowledged: the send was interrupted at its deadline"));
    }

    /** What a share threw: an {@link Error} is thrown on, as it would be on the calling thread. */
    private static Throwable causeOf(ExecutionException ex) {
        Throwable cause = ex.getCause();
        if (cause instanceof Error error) {
            throw error;
        }
        return cause != null ? cause : ex;
    }

    private static Map<Long, Throwable> failAll(List<OutboxRecord> share, Throwable failure) {
        Map<Long, Throwable> failed = new LinkedHashMap<>();
        share.forEach(record -> failed.put(record.id(), failure));
        return failed;
    }

    private static ExecutorService sharePool() {
        AtomicInteger threads = new AtomicInteger();
        ThreadPoolExecutor pool = new ThreadPoolExecutor(
                0, Integer.MAX_VALUE, 60, TimeUnit.SECONDS, new SynchronousQueue<>(), runnable -> {
                    Thread thread = new Thread(runnable, "sumi-outbox-route-" + threads.incrementAndGet());
                    thread.setDaemon(true);
                    return thread;
                });
        return pool;
    }
}
