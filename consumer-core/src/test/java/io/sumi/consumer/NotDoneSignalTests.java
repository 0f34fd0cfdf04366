package io.sumi.consumer;

import static org.assertj.core.api.Assertions.assertThat;

import io.sumi.store.MessageStatus;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * A handler that returns but says its message is not done (a nack: the binder's body throws
 * {@link NotDoneSignal}) has not succeeded (issue 19, A3): the row is never completed, the call
 * returns {@code NOT_DONE} without throwing, and the redelivery runs the handler; a batch nacked
 * at an index completes the messages before it only.
 */
class NotDoneSignalTests extends H2ExecutorTestSupport {

    private final List<List<Integer>> calls = new CopyOnWriteArrayList<>();

    private static List<InboundMessage> batch(String... keys) {
        List<InboundMessage> messages = new ArrayList<>();
        for (String key : keys) {
            messages.add(message(key));
        }
        return messages;
    }

    private double notDone() {
        var counter = meters.find("sumi.messages")
                .tag("consumer", consumer)
                .tag("outcome", "not_done")
                .counter();
        return counter == null ? 0 : counter.count();
    }

    @Test
    void aNackedRecordInLeaseModeIsReleasedAndItsRedeliveryRunsIt() throws Exception {
        HandlerResult<String> nacked = executor.execute(lease(), message("a"), () -> {
            throw NotDoneSignal.of("value");
        });

        assertThat(nacked.outcome()).isEqualTo(MessageOutcome.NOT_DONE);
        assertThat(nacked.value()).isEqualTo("value");
        assertThat(status("a")).isEqualTo(MessageStatus.IN_PROGRESS);
        assertReleasedAtOnce(row("a").orElseThrow());
        assertThat(notDone()).isEqualTo(1);

        HandlerResult<String> again = executor.execute(lease(), message("a"), () -> "ran");
        assertThat(again.outcome()).isEqualTo(MessageOutcome.PROCESSED);
        assertThat(status("a")).isEqualTo(MessageStatus.COMPLETED);
        assertThat(row("a").orElseThrow().attempts()).isEqualTo(2);
    }

    @Test
    void aNackedRecordInTransactionalModeRollsItsRowsBackAndItsRedeliveryRunsIt() throws Exception {
        HandlerResult<Object> nacked = executor.execute(transactional(), message("a"), () -> {
            recordEffect("a");
            throw NotDoneSignal.of(null);
        });

        assertThat(nacked.outcome()).isEqualTo(MessageOutcome.NOT_DONE);
        assertThat(row("a")).isEmpty();
        assertThat(effectKeys()).isEmpty();

        executor.execute(transactional(), message("a"), () -> {
            recordEffect("a");
            return null;
        });
        assertThat(status("a")).isEqualTo(MessageStatus.COMPLETED);
        assertThat(effectKeys()).containsExactly("a");
    }

    @Test
    void aBatchNackedAtAnIndexCompletesTheMessagesBeforeItInLeaseMode() throws Exception {
        List<InboundMessage> batch = batch("a", "b", "c", "d");

        BatchResult result = executor.executeBatch(lease(), batch, indexes -> {
            calls.add(indexes);
            throw NotDoneSignal.from(2);
        });

        assertThat(result).isEqualTo(new BatchResult(2, 0, 2));
        assertThat(result.allDone()).isFalse();
        assertThat(status("a")).isEqualTo(MessageStatus.COMPLETED);
        assertThat(status("b")).isEqualTo(MessageStatus.COMPLETED);
        for (String key : List.of("c", "d")) {
            assertThat(status(key)).isEqualTo(MessageStatus.IN_PROGRESS);
            assertReleasedAtOnce(row(key).orElseThrow());
        }
    }

    @Test
    void aBatchNackedAtAnIndexCommitsTheMessagesBeforeItInTransactionalMode() throws Exception {
        List<InboundMessage> batch = batch("a", "b", "c", "d");

        BatchResult result = executor.executeBatch(transactional(), batch, indexes -> {
            calls.add(indexes);
            for (int index : indexes) {
                recordEffect(List.of("a", "b", "c", "d").get(index));
            }
            if (indexes.contains(2)) {
                throw NotDoneSignal.from(2);
            }
        });

        // The nacked pass rolled back; a second pass ran (and committed) the two before the index.
        assertThat(calls).containsExactly(List.of(0, 1, 2, 3), List.of(0, 1));
        assertThat(result).isEqualTo(new BatchResult(2, 0, 2));
        assertThat(effectKeys()).containsExactly("a", "b");
        assertThat(completedRows()).isEqualTo(2);
        assertThat(row("c")).isEmpty();
    }
}
