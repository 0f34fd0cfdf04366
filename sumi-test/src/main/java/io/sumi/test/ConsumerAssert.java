package io.sumi.test;

import io.sumi.store.MessageStatus;
import io.sumi.store.ProcessedMessage;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.assertj.core.api.AbstractAssert;
import org.jspecify.annotations.Nullable;

/**
 * Assertions over what one consumer did with the messages of the running test. Every failure
 * message says what the kit saw (handler runs and outcomes per key, ledger rows).
 */
public final class ConsumerAssert extends AbstractAssert<ConsumerAssert, SumiTest> {

    private final String name;

    ConsumerAssert(SumiTest actual, String name) {
        super(actual, ConsumerAssert.class);
        this.name = name;
    }

    private DeliveryLog.ConsumerStats stats() {
        DeliveryLog.ConsumerStats stats = actual.log().find(name);
        if (stats == null) {
            failWithMessage(
                    "Expected deliveries to consumer <%s>, but the kit saw none in this test; consumers seen: %s",
                    name, actual.log().consumers());
            throw new AssertionError("unreachable");
        }
        return stats;
    }

    private DeliveryLog.ConsumerStats guardedStats(String what) {
        DeliveryLog.ConsumerStats stats = stats();
        if (!stats.guarded()) {
            failWithMessage(
                    "Expected consumer <%s> to be guarded by Sumi (%s), but no delivery to it went through Sumi's executor:"
                            + " its listener has no @IdempotentHandler (or Sumi's binder is missing); keys seen: %s",
                    name, what, describe(stats));
        }
        return stats;
    }

    /**
     * The handler's own code ran to its end exactly once for each key, and for a consumer Sumi
     * guards, the ledger has the key {@code COMPLETED}. Fails on a listener that did the work once
     * per copy.
     */
    public ConsumerAssert processedOnce(String... keys) {
        DeliveryLog.ConsumerStats stats = stats();
        for (String key : keys) {
            int runs = stats.key(key).runs();
            if (runs != 1) {
                failWithMessage(
                        "Expected consumer <%s> to have processed key <%s> once, but its handler ran %s times (%s)%s",
                        name,
                        key,
                        runs,
                        stats.key(key),
                        stats.guarded() ? "" : "; the consumer is not guarded by Sumi (no @IdempotentHandler)");
            }
            if (stats.guarded()) {
                Optional<ProcessedMessage> row = actual.ledgerRow(stats.name(), key);
                if (row.isEmpty() || row.get().status() != MessageStatus.COMPLETED) {
                    failWithMessage(
                            "Expected the ledger to have key <%s> of consumer <%s> COMPLETED, but it has %s",
                            key, stats.name(), row.map(ConsumerAssert::describe).orElse("no row"));
                }
            }
        }
        return this;
    }

    /** The handler's own code ran to its end exactly {@code times} for {@code key} (a crash makes it run again). */
    public ConsumerAssert ranHandler(String key, int times) {
        int runs = stats().key(key).runs();
        if (runs != times) {
            failWithMessage(
                    "Expected the handler of consumer <%s> to have run %s times for key <%s>, but it ran %s times (%s)",
                    name, times, key, runs, stats().key(key));
        }
        return this;
    }

    /** Exactly {@code count} deliveries of the test ended with {@code outcome}, over every key. */
    public ConsumerAssert hasOutcome(DeliveryOutcome outcome, int count) {
        DeliveryLog.ConsumerStats stats = stats();
        int seen = stats.total(outcome);
        if (seen != count) {
            failWithMessage(
                    "Expected consumer <%s> to have %s %s deliveries, but it had %s; per key: %s%s",
                    name,
                    count,
                    outcome,
                    seen,
                    describe(stats),
                    stats.guarded() ? "" : "; the consumer is not guarded by Sumi (no @IdempotentHandler)");
        }
        return this;
    }

    /** Exactly {@code count} deliveries of {@code key} ended with {@code outcome}. */
    public ConsumerAssert hasOutcome(String key, DeliveryOutcome outcome, int count) {
        DeliveryLog.ConsumerStats stats = stats();
        int seen = stats.key(key).count(outcome);
        if (seen != count) {
            failWithMessage(
                    "Expected consumer <%s> to have %s %s deliveries of key <%s>, but it had %s (%s)",
                    name, count, outcome, key, seen, stats.key(key));
        }
        return this;
    }

    /** Sumi guarded the consumer (its deliveries went through the ledger). */
    public ConsumerAssert isGuardedBySumi() {
        guardedStats("isGuardedBySumi");
        return this;
    }

    /**
     * No key of the test is left claimed in the consumer's ledger ({@code IN_PROGRESS} with a
     * lease that has not ended): nothing that would answer the next delivery BUSY. Fails for a consumer Sumi does not guard (it has
     * no ledger to look at).
     */
    public ConsumerAssert hasNoClaimInProgress() {
        DeliveryLog.ConsumerStats stats = guardedStats("hasNoClaimInProgress");
        List<String> inProgress = new ArrayList<>();
        for (String key : stats.keys()) {
            actual.ledgerRow(stats.name(), key)
                    .filter(ConsumerAssert::isLiveClaim)
                    .ifPresent(row -> inProgress.add(describe(row)));
        }
        if (!inProgress.isEmpty()) {
            failWithMessage(
                    "Expected no claim in progress for consumer <%s>, but the ledger has %s", stats.name(), inProgress);
        }
        return this;
    }

    /**
     * Nothing of the test was dead-lettered for the consumer: on Kafka no record of its consumer
     * group in the dead-letter topic of its topics ({@code <topic>-dlt} by default,
     * {@code sumi.test.kafka.dead-letter-suffix}); through the Stream test binder no copy whose
     * send failed.
     */
    public ConsumerAssert hasNothingDeadLettered() {
        DeliveryLog.ConsumerStats stats = stats();
        int deadLettered = actual.deadLettered(actual.log().namesOf(stats.name()), null);
        if (deadLettered > 0) {
            failWithMessage(
                    "Expected nothing dead-lettered for consumer <%s>, but %s records of the test are in the dead-letter"
                            + " topic; per key: %s",
                    name, deadLettered, describe(stats));
        }
        if (deadLettered < 0) {
            // No dead-letter topic to read (the Stream test binder): a copy whose send failed is lost for good.
            List<String> failed = new ArrayList<>();
            for (String key : stats.keys()) {
                DeliveryLog.KeyStats keyStats = stats.key(key);
                if (keyStats.acknowledged() == 0
                        && keyStats.count(DeliveryOutcome.FAILED) + keyStats.count(DeliveryOutcome.REJECTED) > 0) {
                    failed.add(key);
                }
            }
            if (!failed.isEmpty()) {
                failWithMessage(
                        "Expected nothing dead-lettered for consumer <%s>, but the deliveries of %s failed for good;"
                                + " per key: %s",
                        name, failed, describe(stats));
            }
        }
        return this;
    }

    /** Exactly {@code count} records of the test were dead-lettered for the consumer (Kafka). */
    public ConsumerAssert hasDeadLettered(int count) {
        DeliveryLog.ConsumerStats stats = stats();
        int deadLettered = actual.deadLettered(actual.log().namesOf(stats.name()), null);
        if (deadLettered != count) {
            failWithMessage(
                    "Expected %s records of consumer <%s> in the dead-letter topic, but found %s",
                    count, name, deadLettered);
        }
        return this;
    }

    /**
     * A claim whose lease has not ended: the next delivery would be BUSY. (A released claim stays
     * {@code IN_PROGRESS} with its lease ended, so the next delivery claims it.)
     */
    static boolean isLiveClaim(ProcessedMessage row) {
        Instant leaseUntil = row.leaseUntil();
        return row.status() == MessageStatus.IN_PROGRESS && leaseUntil != null && leaseUntil.isAfter(Instant.now());
    }

    private static String describe(DeliveryLog.ConsumerStats stats) {
        StringBuilder out = new StringBuilder("{");
        for (String key : stats.keys()) {
            if (out.length() > 1) {
                out.append(", ");
            }
            out.append(key).append('=').append(stats.key(key));
        }
        return out.append('}').toString();
    }

    private static String describe(@Nullable ProcessedMessage row) {
        return row == null
                ? "no row"
                : row.messageId() + " " + row.status() + " (attempts " + row.attempts() + ", lease until "
                        + row.leaseUntil() + ")";
    }
}
