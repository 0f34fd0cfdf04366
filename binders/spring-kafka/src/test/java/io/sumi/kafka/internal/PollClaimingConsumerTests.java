package io.sumi.kafka.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sumi.consumer.BatchResult;
import io.sumi.consumer.HandlerDefinition;
import io.sumi.consumer.HandlerResult;
import io.sumi.consumer.IdempotentExecutor;
import io.sumi.consumer.InboundMessage;
import io.sumi.consumer.MessageKeyResolver;
import io.sumi.consumer.PollClaim;
import io.sumi.kafka.KafkaInboundMessage;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.MockConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

/**
 * Issue 19, A6: a completion the ledger refuses at an offset commit fails the commit, and some of
 * Spring Kafka's paths that see that error never seek back (RECORD ack mode after a filtering
 * {@code RecordInterceptor}, a nack): the rest of the poll would then be neither run nor
 * redelivered. Sumi's consumer seeks the poll's partitions back itself before it throws.
 */
class PollClaimingConsumerTests {

    private static final TopicPartition PARTITION = new TopicPartition("orders", 0);

    /** A poll's claims whose completion fails once, as a ledger that is briefly unreachable. */
    static final class FailingOnceClaim implements PollClaim {
        final RuntimeException failure = new IllegalStateException("the ledger is unreachable");
        boolean failed;

        @Override
        public <T> HandlerResult<T> execute(int index, IdempotentExecutor.HandlerBody<T> body) {
            throw new UnsupportedOperationException("not dispatched in this test");
        }

        @Override
        public int completePending() {
            if (!failed) {
                failed = true;
                throw failure;
            }
            return 1;
        }

        @Override
        public void releaseUnrun() {}
    }

    /** An executor that only hands out {@code claim} for a poll. */
    record ClaimingExecutor(PollClaim claim) implements IdempotentExecutor {
        @Override
        public <T> HandlerResult<T> execute(HandlerDefinition handler, InboundMessage message, HandlerBody<T> body) {
            throw new UnsupportedOperationException();
        }

        @Override
        public BatchResult executeBatch(
                HandlerDefinition handler, List<? extends InboundMessage> messages, BatchBody body) {
            throw new UnsupportedOperationException();
        }

        @Override
        public PollClaim claimPoll(HandlerDefinition handler, List<? extends InboundMessage> messages) {
            return claim;
        }

        @Override
        public MessageKeyResolver keyResolver() {
            return new MessageKeyResolver();
        }
    }

    @Test
    void aCompletionRefusedAtACommitSeeksThePollBackSoItsRecordsAreDeliveredAgain() {
        MockConsumer<String, String> mock = new MockConsumer<>("earliest");
        mock.assign(List.of(PARTITION));
        mock.updateBeginningOffsets(Map.of(PARTITION, 0L));
        for (int i = 0; i < 3; i++) {
            mock.addRecord(new ConsumerRecord<>("orders", 0, i, "k" + i, "v" + i));
        }
        Consumer<String, String> consumer = PollClaimingConsumer.wrap(mock);
        assertThat(consumer.poll(Duration.ZERO).count()).isEqualTo(3);
        FailingOnceClaim claim = new FailingOnceClaim();
        Objects.requireNonNull(PollState.current())
                .claimFor(
                        HandlerDefinition.builder("orders").build(),
                        new ClaimingExecutor(claim),
                        KafkaInboundMessage::new);

        // The container ran record 0 and commits it (AckMode.RECORD): the ledger refuses the completion.
        assertThatThrownBy(() -> consumer.commitSync(Map.of(PARTITION, new OffsetAndMetadata(1))))
                .isSameAs(claim.failure);

        assertThat(mock.committed(Set.of(PARTITION)).get(PARTITION))
                .as("nothing committed")
                .isNull();
        assertThat(mock.position(PARTITION))
                .as("sought back to the poll's first record, whatever the container does with the error")
                .isZero();
    }
}
