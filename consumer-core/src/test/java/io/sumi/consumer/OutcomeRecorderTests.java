package io.sumi.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sumi.consumer.OutcomeRecorder.HandlerRun;
import io.sumi.consumer.OutcomeRecorder.Outcome;
import io.sumi.consumer.exception.BatchFailedException;
import io.sumi.consumer.exception.FingerprintMismatchException;
import io.sumi.consumer.exception.InvalidIdempotencyKeyException;
import io.sumi.consumer.exception.MessageBusyException;
import io.sumi.consumer.exception.ReconciliationRequiredException;
import java.util.List;
import org.junit.jupiter.api.Test;

/** How a call's end maps to one outcome, and what a handler run records, without a ledger. */
class OutcomeRecorderTests {

    final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    final OutcomeRecorder recorder = new OutcomeRecorder(meters);

    @Test
    void beforeTheHandlerRanARefusalIsCountedAsWhatItRefused() {
        assertThat(Outcome.of(new MessageBusyException("busy"), false)).isEqualTo(Outcome.BUSY);
        assertThat(Outcome.of(new ReconciliationRequiredException("c", "k", "r"), false))
                .isEqualTo(Outcome.RECONCILE);
        assertThat(Outcome.of(new FingerprintMismatchException("f"), false)).isEqualTo(Outcome.REJECTED);
        assertThat(Outcome.of(new InvalidIdempotencyKeyException("k"), false)).isEqualTo(Outcome.REJECTED);
        assertThat(Outcome.of(new IllegalStateException("ledger down"), false)).isEqualTo(Outcome.FAILED);
    }

    @Test
    void onceTheHandlerRanEveryFailureIsAFailureEvenARefusalTheHandlerThrewItself() {
        assertThat(Outcome.of(new MessageBusyException("from a nested call"), true))
                .isEqualTo(Outcome.FAILED);
        assertThat(Outcome.of(new IllegalStateException("commit failed"), true)).isEqualTo(Outcome.FAILED);
    }

    @Test
    void aRecordHandlerRunRecordsItsTimeButNoOutcome() throws Exception {
        HandlerRun run = recorder.handlerRun("c");
        assertThat(run.started()).isFalse();

        assertThatThrownBy(() -> run.run(() -> {
                    throw new IllegalStateException("boom");
                }))
                .hasMessage("boom");

        assertThat(run.started()).isTrue();
        assertThat(meters.get(OutcomeRecorder.HANDLER_DURATION)
                        .tag("result", "failure")
                        .timer()
                        .count())
                .isEqualTo(1);
        assertThat(meters.find(OutcomeRecorder.MESSAGES).counters())
                .as("every outcome exists from the consumer's first message on, none counted by a record's run")
                .hasSize(OutcomeRecorder.Outcome.values().length)
                .allSatisfy(counter -> assertThat(counter.count()).isZero());
    }

    @Test
    void aFailedBatchHandlerRunCountsOneFailedMessageAndIsKnownAsTheHandlersOwn() {
        HandlerRun run = recorder.handlerRun("c");
        BatchFailedException reported = new BatchFailedException(1, new IllegalStateException("b failed"));

        assertThatThrownBy(() -> run.run(
                        indexes -> {
                            throw reported;
                        },
                        List.of(0, 1)))
                .isSameAs(reported);

        assertThat(run.threwFromBatchHandler(reported)).isTrue();
        assertThat(run.threwFromBatchHandler(new BatchFailedException(1, new IllegalStateException("b failed"))))
                .isFalse();
        assertThat(meters.get(OutcomeRecorder.MESSAGES)
                        .tag("outcome", "failed")
                        .counter()
                        .count())
                .isEqualTo(1.0);
    }

    @Test
    void aLedgerErrorCarryingTheHandlersReportIsKnownAsTheHandlersOwn() {
        HandlerRun run = recorder.handlerRun("c");
        BatchFailedException reported = new BatchFailedException(1, new IllegalStateException("b failed"));
        assertThatThrownBy(() -> run.run(
                        indexes -> {
                            throw reported;
                        },
                        List.of(0, 1)))
                .isSameAs(reported);

        // Completing the messages before the stop failed: the ledger's error replaces the report (NEW-2).
        IllegalStateException ledgerDown = new IllegalStateException("ledger down");
        ledgerDown.addSuppressed(reported);

        assertThat(run.threwFromBatchHandler(ledgerDown)).isTrue();
        assertThat(run.threwFromBatchHandler(new IllegalStateException("ledger down")))
                .isFalse();
    }

    @Test
    void aBatchCountsItsDoneMessagesAndNothingForZero() {
        recorder.batch("c", 3, 0);

        assertThat(meters.get(OutcomeRecorder.MESSAGES)
                        .tag("outcome", "processed")
                        .counter()
                        .count())
                .isEqualTo(3.0);
        assertThat(meters.find(OutcomeRecorder.MESSAGES)
                        .tag("outcome", "duplicate")
                        .counter())
                .isNull();
    }
}
