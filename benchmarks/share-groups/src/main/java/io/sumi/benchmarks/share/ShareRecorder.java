package io.sumi.benchmarks.share;

import java.util.Arrays;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.consumer.ConsumerRecord;

/**
 * What the running case's handler saw: the drain's calls, its first and last call, and each paced
 * record's latency (handler start minus the producer's timestamp). One case runs at a time. The
 * same measure as the end-to-end benchmark's recorder (benchmarks, {@code Recorder}), which this
 * Boot-4.1-only module cannot depend on.
 */
final class ShareRecorder {

    /** The keys of the paced phase's records, which go to the drain's topic after the drain. */
    static final String PACED_KEY_PREFIX = "paced-";

    private static final AtomicLong drained = new AtomicLong();
    private static final AtomicLong firstNanos = new AtomicLong();
    private static final AtomicLong lastNanos = new AtomicLong();
    private static final AtomicInteger paced = new AtomicInteger();
    private static volatile long[] latenciesMillis = new long[0];
    private static volatile CountDownLatch gate = new CountDownLatch(0);

    private ShareRecorder() {}

    static void reset(int pacedCapacity) {
        drained.set(0);
        firstNanos.set(0);
        lastNanos.set(0);
        paced.set(0);
        latenciesMillis = new long[pacedCapacity];
        gate = new CountDownLatch(1);
    }

    /** Lets the records through that {@link ShareGate} holds (closed again by {@link #reset}). */
    static void openGate() {
        gate.countDown();
    }

    /** Waits at the gate; a consumer thread interrupted (its container stops) goes on. */
    static void awaitGate() {
        try {
            gate.await();
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
    }

    static void handled(ConsumerRecord<?, ?> record) {
        Object key = record.key();
        if (key != null && key.toString().startsWith(PACED_KEY_PREFIX)) {
            int i = paced.getAndIncrement();
            long[] samples = latenciesMillis;
            if (i < samples.length) {
                samples[i] = System.currentTimeMillis() - record.timestamp();
            }
            return;
        }
        long now = System.nanoTime();
        firstNanos.compareAndSet(0, now);
        lastNanos.accumulateAndGet(now, Math::max);
        drained.incrementAndGet();
    }

    static long drained() {
        return drained.get();
    }

    static int paced() {
        return paced.get();
    }

    static double drainSeconds() {
        return (lastNanos.get() - firstNanos.get()) / 1e9;
    }

    /** The {@code p}-th percentile (0..100) of the paced records' latencies, in milliseconds. */
    static long latencyPercentile(double p) {
        int n = Math.min(paced.get(), latenciesMillis.length);
        if (n == 0) {
            return -1;
        }
        long[] sorted = Arrays.copyOf(latenciesMillis, n);
        Arrays.sort(sorted);
        return sorted[Math.max(0, Math.min(n - 1, (int) Math.ceil(p / 100.0 * n) - 1))];
    }
}
