package io.sumi.kafka;

import io.sumi.budget.BudgetExhaustedException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.common.TopicPartition;
import org.springframework.kafka.KafkaException;
import org.springframework.kafka.listener.CommonErrorHandler;
import org.springframework.kafka.listener.MessageListenerContainer;
import org.springframework.kafka.support.TopicPartitionOffset;

/**
 * A {@link CommonErrorHandler} that handles a {@link BudgetExhaustedException} (anywhere in the
 * failure's cause chain) itself and gives every other failure to its delegate, usually a
 * {@code DefaultErrorHandler} with a dead-letter recoverer.
 *
 * <p>A budget refusal is not a failure of the record: the failed record and the rest of the poll
 * are sought back and a {@link KafkaException} at {@code DEBUG} level tells the container not to
 * acknowledge them (as Spring Kafka's own handlers do after seeking), the delegate's retry count is not touched (nothing is
 * dead-lettered because of the budget), and the container is paused through the
 * {@link BudgetListenerPauser} until the budget half-opens. Create it with
 * {@link BudgetListenerPauser#errorHandler(CommonErrorHandler)}.
 */
public final class BudgetAwareErrorHandler implements CommonErrorHandler {

    private final CommonErrorHandler delegate;
    private final BudgetListenerPauser pauser;

    BudgetAwareErrorHandler(CommonErrorHandler delegate, BudgetListenerPauser pauser) {
        this.delegate = delegate;
        this.pauser = pauser;
    }

    /** The handler of every failure that is not a budget refusal. */
    public CommonErrorHandler delegate() {
        return delegate;
    }

    BudgetListenerPauser pauser() {
        return pauser;
    }

    @Override
    public void handleRemaining(
            Exception thrownException,
            List<ConsumerRecord<?, ?>> records,
            Consumer<?, ?> consumer,
            MessageListenerContainer container) {
        Optional<BudgetExhaustedException> refusal = BudgetExhaustedException.find(thrownException);
        if (refusal.isEmpty()) {
            delegate.handleRemaining(thrownException, records, consumer, container);
            return;
        }
        seekBack(records, consumer);
        pauser.pause(container, refusal.get());
        throw sought(refusal.get());
    }

    @Override
    public boolean handleOne(
            Exception thrownException,
            ConsumerRecord<?, ?> record,
            Consumer<?, ?> consumer,
            MessageListenerContainer container) {
        Optional<BudgetExhaustedException> refusal = BudgetExhaustedException.find(thrownException);
        if (refusal.isEmpty()) {
            return delegate.handleOne(thrownException, record, consumer, container);
        }
        pauser.pause(container, refusal.get());
        return false; // not handled: the container keeps the record and delivers it again
    }

    @Override
    public void handleBatch(
            Exception thrownException,
            ConsumerRecords<?, ?> data,
            Consumer<?, ?> consumer,
            MessageListenerContainer container,
            Runnable invokeListener) {
        Optional<BudgetExhaustedException> refusal = BudgetExhaustedException.find(thrownException);
        if (refusal.isEmpty()) {
            delegate.handleBatch(thrownException, data, consumer, container, invokeListener);
            return;
        }
        seekBack(data, consumer);
        pauser.pause(container, refusal.get());
        throw sought(refusal.get());
    }

    @Override
    public <K, V> ConsumerRecords<K, V> handleBatchAndReturnRemaining(
            Exception thrownException,
            ConsumerRecords<?, ?> data,
            Consumer<?, ?> consumer,
            MessageListenerContainer container,
            Runnable invokeListener) {
        Optional<BudgetExhaustedException> refusal = BudgetExhaustedException.find(thrownException);
        if (refusal.isEmpty()) {
            return delegate.handleBatchAndReturnRemaining(thrownException, data, consumer, container, invokeListener);
        }
        seekBack(data, consumer);
        pauser.pause(container, refusal.get());
        throw sought(refusal.get());
    }

    /**
     * Thrown after seeking back, as Spring Kafka's own handlers do: an error handler that returns
     * normally has handled the record, and the container would acknowledge it.
     */
    private static KafkaException sought(BudgetExhaustedException refusal) {
        return new KafkaException(
                "Budget '" + refusal.budget() + "' refused the call; sought back and paused the container",
                KafkaException.Level.DEBUG,
                refusal);
    }

    private static void seekBack(Iterable<? extends ConsumerRecord<?, ?>> records, Consumer<?, ?> consumer) {
        Map<TopicPartition, Long> first = new LinkedHashMap<>();
        for (ConsumerRecord<?, ?> record : records) {
            first.putIfAbsent(new TopicPartition(record.topic(), record.partition()), record.offset());
        }
        first.forEach(consumer::seek);
    }

    // ------------------------------------------------------------------ the rest is the delegate's

    @Override
    public void handleOtherException(
            Exception thrownException,
            Consumer<?, ?> consumer,
            MessageListenerContainer container,
            boolean batchListener) {
        delegate.handleOtherException(thrownException, consumer, container, batchListener);
    }

    @Override
    public boolean seeksAfterHandling() {
        return delegate.seeksAfterHandling();
    }

    @Override
    public boolean deliveryAttemptHeader() {
        return delegate.deliveryAttemptHeader();
    }

    @Override
    public int deliveryAttempt(TopicPartitionOffset topicPartitionOffset) {
        return delegate.deliveryAttempt(topicPartitionOffset);
    }

    @Override
    public void clearThreadState() {
        delegate.clearThreadState();
    }

    @Override
    public boolean isAckAfterHandle() {
        return delegate.isAckAfterHandle();
    }

    @Override
    public void setAckAfterHandle(boolean ack) {
        delegate.setAckAfterHandle(ack);
    }

    @Override
    public void onPartitionsAssigned(
            Consumer<?, ?> consumer, java.util.Collection<TopicPartition> partitions, Runnable publishPause) {
        delegate.onPartitionsAssigned(consumer, partitions, publishPause);
    }
}
