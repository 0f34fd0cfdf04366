package io.sumi.outbox;

import static org.assertj.core.api.Assertions.assertThat;

import io.sumi.testing.TestDatabase;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The dispatcher on PostgreSQL only: {@code dispatchAmong}, the CDC path. The tests of every database
 * are {@link OutboxDispatcherContractTests}.
 */
class PostgresOutboxDispatcherIntegrationTests extends OutboxDispatcherFixture {

    @Override
    TestDatabase database() {
        return TestDatabase.POSTGRESQL;
    }

    // ---------------------------------------------------------------- dispatchAmong (the CDC path)

    @Test
    void dispatchAmongSendsOnlyTheGivenRowsAndTheRowsOfOneAggregateInOrderOverSeveralRounds() {
        long a1 = append("A", "orders", "A1");
        long a2 = append("A", "orders", "A2");
        long a3 = append("A", "orders", "A3");
        long b1 = append("B", "orders", "B1");
        long other = append("C", "orders", "C1");
        OutboxDispatcher dispatcher = dispatcher(publisher).build();

        DispatchResult result = dispatcher.dispatchAmong(List.of(a3, b1, a1, a2));

        assertThat(result).isEqualTo(new DispatchResult(4, 4, 0, 0, 0, 0));
        // A1 and B1 in the first round, then A2, then A3.
        assertThat(publisher.sentIds()).containsExactly(a1, b1, a2, a3);
        assertThat(row(other).pending()).isTrue();
        assertThat(dispatcher.dispatchAmong(List.of(a1, a2))).isEqualTo(DispatchResult.NOTHING);
    }

    @Test
    void dispatchAmongLeavesDelayedRowsRowsBehindAnUnlistedEarlierRowAndRowsLeasedByAnother() {
        long delayed = append(OutboxMessage.builder("D", "orders", "D1")
                .delay(Duration.ofMinutes(1))
                .build());
        long earlier = append("E", "orders", "E1");
        long behind = append("E", "orders", "E2");
        long leased = append("L", "orders", "L1");
        long free = append("F", "orders", "F1");
        RecordingPublisher cdc = new RecordingPublisher();
        OutboxDispatcher cdcDispatcher = dispatcher(cdc).build();
        // A polling round holds L1 (and E1) while the CDC path runs.
        OutboxDispatcher polling = dispatcher(records -> {
                    assertThat(cdcDispatcher.dispatchAmong(List.of(delayed, behind, leased, free)))
                            .isEqualTo(new DispatchResult(1, 1, 0, 0, 0, 0));
                    return PublishResult.allSent();
                })
                .batchSize(2)
                .build();

        assertThat(polling.dispatchOnce().sent()).isEqualTo(2);

        assertThat(cdc.sentIds()).containsExactly(free);
        assertThat(row(delayed).pending()).isTrue();
        assertThat(row(delayed).attempts()).isZero();
        assertThat(row(earlier).outcome()).isEqualTo(DispatchOutcome.SENT);
        assertThat(row(leased).outcome()).isEqualTo(DispatchOutcome.SENT);
        assertThat(row(behind).pending()).isTrue();
    }

    @Test
    void aPollDelayHoldsRowsBackFromPollingButNotFromDispatchAmong() {
        long first = append("A", "orders", "A1");
        long second = append("B", "orders", "B1");
        OutboxDispatcher dispatcher =
                dispatcher(publisher).pollDelay(Duration.ofSeconds(10)).build();

        assertThat(dispatcher.dispatchOnce().claimed()).isZero();
        assertThat(dispatcher.dispatchAmong(List.of(first)).sent()).isOne();
        clock.advance(Duration.ofSeconds(9));
        assertThat(dispatcher.dispatchOnce().claimed()).isZero();
        clock.advance(Duration.ofSeconds(1));
        assertThat(dispatcher.dispatchOnce().sent()).isOne();
        assertThat(publisher.sentIds()).containsExactly(first, second);
    }

    @Test
    void dispatchAmongRecordsAFailedSendForPollingToRetry() {
        long id = append("A", "orders", "A1");
        OutboxDispatcher dispatcher = dispatcher(records ->
                        PublishResult.failed(java.util.Map.of(records.get(0).id(), new IllegalStateException("down"))))
                .build();

        assertThat(dispatcher.dispatchAmong(List.of(id))).isEqualTo(new DispatchResult(1, 0, 0, 0, 1, 0));

        OutboxRecord row = row(id);
        assertThat(row.pending()).isTrue();
        assertThat(row.attempts()).isOne();
        assertThat(row.availableAt()).isAfter(clock.instant());
    }
}
