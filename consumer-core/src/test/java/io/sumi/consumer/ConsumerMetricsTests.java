package io.sumi.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.micrometer.core.instrument.Timer;
import io.sumi.consumer.exception.InvalidIdempotencyKeyException;
import io.sumi.consumer.exception.MessageBusyException;
import io.sumi.consumer.exception.MissingIdempotencyKeyException;
import io.sumi.store.ClaimRequest;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * {@code sumi.messages} counts every message once, by outcome and namespace; handler time goes to
 * {@code sumi.handler.duration}.
 */
class ConsumerMetricsTests extends H2ExecutorTestSupport {

    @Test
    void everyOutcomeIsCountedOnceWithItsNamespaceInLeaseMode() throws Exception {
        executor.execute(lease(), message("processed"), () -> null);
        executor.execute(lease(), message("processed"), () -> null);
        store.claim(consumer, new ClaimRequest("busy", null), LEASE);
        assertThatThrownBy(() -> executor.execute(lease(), message("busy"), () -> null))
                .isInstanceOf(MessageBusyException.class);
        assertThatThrownBy(() -> executor.execute(lease(), message("failed"), () -> {
                    throw new IllegalStateException("boom");
                }))
                .isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> executor.execute(lease(), withHeaders("no key"), () -> null))
                .isInstanceOf(MissingIdempotencyKeyException.class);

        assertThat(outcomes())
                .containsExactlyInAnyOrderEntriesOf(
                        Map.of("processed", 1.0, "duplicate", 1.0, "busy", 1.0, "failed", 1.0, "rejected", 1.0));
    }

    @Test
    void everyOutcomeIsCountedOnceWithItsNamespaceInTransactionalMode() throws Exception {
        executor.execute(transactional(), message("processed"), () -> null);
        executor.execute(transactional(), message("processed"), () -> null);
        store.claim(consumer, new ClaimRequest("busy", null), LEASE);
        assertThatThrownBy(() -> executor.execute(transactional(), message("busy"), () -> null))
                .isInstanceOf(MessageBusyException.class);
        assertThatThrownBy(() -> executor.execute(transactional(), message("failed"), () -> {
                    throw new IllegalStateException("boom");
                }))
                .isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> executor.execute(transactional(), message("k".repeat(201)), () -> null))
                .isInstanceOf(InvalidIdempotencyKeyException.class);

        assertThat(outcomes())
                .containsExactlyInAnyOrderEntriesOf(
                        Map.of("processed", 1.0, "duplicate", 1.0, "busy", 1.0, "failed", 1.0, "rejected", 1.0));
    }

    /**
     * Every counter a shipped alert reads exists at 0 from a consumer's first message on, whatever
     * has happened yet: Prometheus's {@code increase()} cannot see the first event of a series that
     * appears with it, so a consumer's first late renewal or first outage would pass unseen by
     * SumiLeaseRenewalsLate and SumiLedgerUnreachable (docs/operations.md, "Alerts").
     */
    @Test
    void theCountersTheAlertsReadExistAtZeroFromAConsumersFirstMessage() throws Exception {
        executor.execute(lease(), message("first"), () -> null);

        assertThat(tagsAtZero("sumi.leases.renewals", "result"))
                .containsExactlyInAnyOrder("renewed", "lost", "failed", "late");
        assertThat(tagsAtZero("sumi.ledger.unavailable", "call"))
                .containsExactlyInAnyOrder("claim", "complete", "release", "read", "mark for reconciliation");
        assertThat(tagsAtZero("sumi.messages", "outcome")).contains("ledger_unavailable", "busy");
    }

    /** The values of {@code tag} of this namespace's counters {@code name} that are registered and at 0. */
    private List<String> tagsAtZero(String name, String tag) {
        return meters.find(name).tag("consumer", consumer).counters().stream()
                .filter(counter -> counter.count() == 0)
                .map(counter -> counter.getId().getTag(tag))
                .toList();
    }

    @Test
    void namespacesAreCountedApart() throws Exception {
        HandlerDefinition other = HandlerDefinition.builder(consumer + "-other")
                .mode(IdempotencyMode.LEASE)
                .build();
        try {
            executor.execute(lease(), message("a"), () -> null);
            executor.execute(other, message("a"), () -> null);
            executor.execute(other, message("b"), () -> null);

            assertThat(messages("processed")).isEqualTo(1.0);
            assertThat(meters.get("sumi.messages")
                            .tag("consumer", consumer + "-other")
                            .tag("outcome", "processed")
                            .counter()
                            .count())
                    .isEqualTo(2.0);
        } finally {
            jdbc.update("DELETE FROM processed_messages WHERE consumer = ?", consumer + "-other");
        }
    }

    @Test
    void handlerTimeIsRecordedBySuccessAndFailure() throws Exception {
        executor.execute(lease(), message("a"), () -> null);
        executor.execute(transactional(), message("b"), () -> null);
        assertThatThrownBy(() -> executor.execute(lease(), message("c"), () -> {
                    throw new IllegalStateException("boom");
                }))
                .isInstanceOf(IllegalStateException.class);
        executor.execute(lease(), message("a"), () -> null);

        Timer success = meters.get("sumi.handler.duration")
                .tag("consumer", consumer)
                .tag("result", "success")
                .timer();
        Timer failure = meters.get("sumi.handler.duration")
                .tag("consumer", consumer)
                .tag("result", "failure")
                .timer();
        assertThat(success.count()).as("duplicates cost no handler time").isEqualTo(2);
        assertThat(failure.count()).isEqualTo(1);
    }

    @Test
    void batchesCountEachMessage() throws Exception {
        executor.execute(lease(), message("done"), () -> null);

        executor.executeBatch(
                lease(), List.of(message("a"), message("done"), message("b"), message("a")), indexes -> {});

        assertThat(messages("processed")).isEqualTo(3.0);
        assertThat(messages("duplicate")).isEqualTo(2.0);
    }
}
