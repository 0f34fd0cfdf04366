package io.sumi.stream.internal;

import io.sumi.consumer.HandlerResult;
import io.sumi.consumer.MessageOutcome;
import io.sumi.consumer.NotDoneSignal;
import io.sumi.kafka.internal.DeferredAcknowledgment;
import org.jspecify.annotations.Nullable;
import org.springframework.kafka.support.Acknowledgment;
import org.springframework.kafka.support.KafkaHeaders;
import org.springframework.messaging.Message;
import org.springframework.messaging.support.MessageBuilder;

/**
 * A Kafka binder binding with {@code ack-mode: MANUAL} gives the function the record's
 * {@link Acknowledgment} in the {@code kafka_acknowledgment} header. The function gets Sumi's
 * deferring one in its place (the same as {@code @KafkaListener} methods get,
 * {@link DeferredAcknowledgment}), so that a {@code nack()} is not success (the claim is released,
 * and the nack then reaches the container, which delivers the record again) and an
 * {@code acknowledge()} commits nothing before the completion is written. Loaded only when Spring
 * Kafka and Sumi's Spring Kafka binder are on the class path.
 */
final class KafkaAcknowledgments implements IdempotentInvoker.Settlement {

    private final Message<?> input;
    private final DeferredAcknowledgment acknowledgment;

    private KafkaAcknowledgments(Message<?> input, DeferredAcknowledgment acknowledgment) {
        this.input = input;
        this.acknowledgment = acknowledgment;
    }

    /** The settlement of a function input that carries an acknowledgment, or {@code null}. */
    static IdempotentInvoker.@Nullable Settlement defer(Object input) {
        if (!(input instanceof Message<?> message)
                || !(message.getHeaders().get(KafkaHeaders.ACKNOWLEDGMENT) instanceof Acknowledgment container)) {
            return null;
        }
        DeferredAcknowledgment deferred = new DeferredAcknowledgment(container);
        return new KafkaAcknowledgments(
                MessageBuilder.fromMessage(message)
                        .setHeader(KafkaHeaders.ACKNOWLEDGMENT, deferred)
                        .build(),
                deferred);
    }

    @Override
    public Object input() {
        return input;
    }

    @Override
    public @Nullable Object returned(@Nullable Object value) throws NotDoneSignal {
        acknowledgment.checkDone(value);
        return value;
    }

    @Override
    public void settled(HandlerResult<?> result) {
        acknowledgment.settleRecord(result.outcome() == MessageOutcome.NOT_DONE);
    }

    @Override
    public void failed(Throwable failure, boolean ran) {
        acknowledgment.abandon();
    }
}
