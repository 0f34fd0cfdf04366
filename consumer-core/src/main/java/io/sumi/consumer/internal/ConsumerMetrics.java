package io.sumi.consumer.internal;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * The consumer's Micrometer meters, looked up once per (consumer, outcome) and cached, so the hot
 * path does no meter registration.
 */
final class ConsumerMetrics {

    static final String MESSAGES = "sumi.messages";
    static final String HANDLER_DURATION = "sumi.handler.duration";
    static final String FINGERPRINT_MISMATCHES = "sumi.fingerprint.mismatches";
    static final String LEASES_LOST = "sumi.leases.lost";
    static final String RECONCILE_MARKED = "sumi.reconcile.marked";

    enum Outcome {
        PROCESSED, DUPLICATE, BUSY, FAILED, REJECTED, RECONCILE;

        final String tag = name().toLowerCase(java.util.Locale.ROOT);
    }

    private record Key(String consumer, String what) {
    }

    private final MeterRegistry registry;
    private final Map<Key, Counter> counters = new ConcurrentHashMap<>();
    private final Map<Key, Timer> timers = new ConcurrentHashMap<>();

    ConsumerMetrics(MeterRegistry registry) {
        this.registry = registry;
    }

    void count(String consumer, Outcome outcome, int amount) {
        if (amount > 0) {
            counters.computeIfAbsent(new Key(consumer, outcome.tag), key -> Counter.builder(MESSAGES)
                    .description("Messages seen by idempotent handlers, by outcome")
                    .tag("consumer", consumer).tag("outcome", outcome.tag).register(registry)).increment(amount);
        }
    }

    void count(String consumer, Outcome outcome) {
        count(consumer, outcome, 1);
    }

    void fingerprintMismatch(String consumer) {
        counters.computeIfAbsent(new Key(consumer, FINGERPRINT_MISMATCHES), key -> Counter.builder(FINGERPRINT_MISMATCHES)
                .description("Keys that arrived again with another payload")
                .tag("consumer", consumer).register(registry)).increment();
    }

    void leaseLost(String consumer, int amount) {
        counters.computeIfAbsent(new Key(consumer, LEASES_LOST), key -> Counter.builder(LEASES_LOST)
                .description("Claims completed after another consumer had taken the message over")
                .tag("consumer", consumer).register(registry)).increment(amount);
    }

    void reconcileMarked(String consumer) {
        counters.computeIfAbsent(new Key(consumer, RECONCILE_MARKED), key -> Counter.builder(RECONCILE_MARKED)
                .description("Messages whose outcome was uncertain and that were marked for reconciliation")
                .tag("consumer", consumer).register(registry)).increment();
    }

    void handlerDuration(String consumer, boolean success, long nanos) {
        String result = success ? "success" : "failure";
        timers.computeIfAbsent(new Key(consumer, result), key -> Timer.builder(HANDLER_DURATION)
                .description("Time spent in idempotent handlers")
                .tag("consumer", consumer).tag("result", result).register(registry)).record(nanos, TimeUnit.NANOSECONDS);
    }
}
