package io.sumi.benchmarks.outbox;

import java.time.Instant;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Records created → acked lags, in microseconds, from the broker acknowledgement callbacks of both
 * systems (the Kafka producer's callback thread). The creation time and the phase travel in the
 * payload ({@link Payloads}), so both systems are measured by exactly the same code at the same
 * point: the moment the producer reports the record acknowledged ({@code acks=all}).
 */
final class LagRecorder {

    private volatile String phase = "";
    private long[] lags = new long[1 << 16];
    private int size;
    private final AtomicLong ackedInPhase = new AtomicLong();
    private final AtomicLong ackedTotal = new AtomicLong();

    /** Starts a new phase: only acks of records carrying this phase are recorded from now on. */
    synchronized void reset(String newPhase) {
        phase = newPhase;
        size = 0;
        ackedInPhase.set(0);
    }

    /** Called on every acknowledged record with its value. */
    void acked(String payload) {
        long now = nowMicros();
        ackedTotal.incrementAndGet();
        if (payload == null || !phase.equals(Payloads.phase(payload))) {
            return;
        }
        long lag = now - Payloads.createdMicros(payload);
        ackedInPhase.incrementAndGet();
        synchronized (this) {
            if (size == lags.length) {
                lags = Arrays.copyOf(lags, size * 2);
            }
            lags[size++] = lag;
        }
    }

    long ackedInPhase() {
        return ackedInPhase.get();
    }

    long ackedTotal() {
        return ackedTotal.get();
    }

    /** p50, p95, p99, max of the current phase in milliseconds; NaNs when nothing was recorded. */
    synchronized double[] percentilesMillis() {
        if (size == 0) {
            return new double[] {Double.NaN, Double.NaN, Double.NaN, Double.NaN};
        }
        long[] sorted = Arrays.copyOf(lags, size);
        Arrays.sort(sorted);
        return new double[] {at(sorted, 0.50), at(sorted, 0.95), at(sorted, 0.99), sorted[sorted.length - 1] / 1000.0};
    }

    private static double at(long[] sorted, double quantile) {
        int index = (int) Math.ceil(quantile * sorted.length) - 1;
        return sorted[Math.max(0, Math.min(sorted.length - 1, index))] / 1000.0;
    }

    static long nowMicros() {
        Instant now = Instant.now();
        return now.getEpochSecond() * 1_000_000L + now.getNano() / 1_000;
    }
}
