package io.sumi.outbox;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/** The dispatcher's meters, per topic, created on first use. */
final class DispatcherMetrics {

    private final MeterRegistry registry;
    private final Map<String, Timer> latency = new ConcurrentHashMap<>();
    private final Map<String, DistributionSummary> attempts = new ConcurrentHashMap<>();
    private final Map<String, Counter> dispatched = new ConcurrentHashMap<>();
    private final Map<String, Counter> failures = new ConcurrentHashMap<>();
    private final Map<String, Counter> parked = new ConcurrentHashMap<>();
    private final Map<String, Counter> polls = new ConcurrentHashMap<>();
    private final Counter statisticsRefreshes;

    DispatcherMetrics(MeterRegistry registry) {
        this.registry = registry;
        this.statisticsRefreshes = Counter.builder("outbox.statistics.refreshes")
                .description("ANALYZE runs of the outbox table by the dispatcher, after its planner statistics"
                        + " counted fewer pending rows than a claim took")
                .register(registry);
    }

    /**
     * A topic's failure counters exist from its first row on, at 0: Prometheus's {@code increase()}
     * cannot see the first event of a series that appears with it.
     */
    private void firstUse(String topic) {
        if (!failures.containsKey(topic)) {
            failures.computeIfAbsent(topic, this::failureCounter);
            parked.computeIfAbsent(topic, this::parkedCounter);
        }
    }

    private Counter failureCounter(String topic) {
        return Counter.builder("outbox.send.failures")
                .description("Failed sends of outbox rows (each is retried with backoff, or parked)")
                .tag("topic", topic)
                .register(registry);
    }

    private Counter parkedCounter(String topic) {
        return Counter.builder("outbox.rows.parked")
                .description("Outbox rows parked after their last allowed attempt")
                .tag("topic", topic)
                .register(registry);
    }

    /** A row acknowledged by the broker: created → acked, and how many tries it took. */
    void sent(String topic, Duration createdToAcked, int tries) {
        firstUse(topic);
        latency.computeIfAbsent(
                        topic,
                        t -> Timer.builder("outbox.dispatch.latency")
                                .description("Time from an outbox row's creation to the broker's acknowledgement")
                                .tag("topic", t)
                                .publishPercentileHistogram()
                                // Client-side percentiles too, for registries without histogram queries (Simple, JMX).
                                .publishPercentiles(0.5, 0.95, 0.99)
                                .minimumExpectedValue(Duration.ofMillis(1))
                                .maximumExpectedValue(Duration.ofHours(1))
                                .register(registry))
                .record(createdToAcked.isNegative() ? Duration.ZERO : createdToAcked);
        attempts.computeIfAbsent(
                        topic,
                        t -> DistributionSummary.builder("outbox.attempts")
                                .description("Sends an outbox row took until it was acknowledged (1 = first try)")
                                .tag("topic", t)
                                .serviceLevelObjectives(1, 2, 3, 5, 8, 13)
                                .register(registry))
                .record(tries);
        dispatched(topic, DispatchOutcome.SENT, 1);
    }

    void dispatched(String topic, DispatchOutcome outcome, int count) {
        dispatched
                .computeIfAbsent(
                        topic + '\u0000' + outcome,
                        key -> Counter.builder("outbox.dispatched")
                                .description("Outbox rows recorded as dispatched, by outcome (sent, shadow, skipped)")
                                .tag("topic", topic)
                                .tag("outcome", outcome.name().toLowerCase(java.util.Locale.ROOT))
                                .register(registry))
                .increment(count);
    }

    void failed(String topic) {
        firstUse(topic);
        failures.computeIfAbsent(topic, this::failureCounter).increment();
    }

    void parked(String topic) {
        firstUse(topic);
        parked.computeIfAbsent(topic, this::parkedCounter).increment();
    }

    void poll(String result) {
        polls.computeIfAbsent(
                        result,
                        r -> Counter.builder("outbox.polls")
                                .description(
                                        "Claim statements run by the outbox dispatcher, by result (rows, empty, error)")
                                .tag("result", r)
                                .register(registry))
                .increment();
    }

    void statisticsRefreshed() {
        statisticsRefreshes.increment();
    }
}
