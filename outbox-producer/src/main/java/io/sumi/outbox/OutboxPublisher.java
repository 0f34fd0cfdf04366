package io.sumi.outbox;

import java.time.Duration;
import java.util.List;

/**
 * Sends claimed outbox rows to a broker: the dispatcher's only contact with the outside. Sumi
 * ships {@code io.sumi.outbox.kafka.KafkaOutboxPublisher}; an implementation for another broker
 * follows the same contract.
 *
 * <p>Contract: {@link #publish} returns only when every record has been acknowledged by the broker
 * or has failed; a record reported as sent must be durably accepted (for Kafka: {@code acks=all}).
 * Records are given in id order; records with the same aggregate id must reach the broker in that
 * order (same key, same partition). A failure of single records is reported in the result, not
 * thrown; an exception thrown by {@code publish} fails the whole batch. A record reported as failed
 * may still have reached the broker (an acknowledgement lost on the way back): it is sent again
 * later, and consumers dedup it by its {@link OutboxHeaders#OUTBOX_ID}.
 *
 * <p>Deadline: the dispatcher calls {@link #publish(List, Duration)} with what is left of the
 * batch's send timeout. An implementation should stop handing records to the broker once it has
 * passed and report every record without an acknowledgement as failed. If {@code publish} has not
 * returned by then, the dispatcher interrupts its thread: blocking calls in an implementation must
 * give up when interrupted (the Kafka client's do), and must not send the batch's records later.
 *
 * <p>Implementations must be thread-safe: several dispatchers may share one.
 */
@FunctionalInterface
public interface OutboxPublisher {

    /**
     * Sends {@code records} and waits for every acknowledgement.
     *
     * @param records the batch, in id order, never empty
     * @return which records failed, and why; all others count as acknowledged
     */
    PublishResult publish(List<OutboxRecord> records);

    /**
     * Sends {@code records}, returning within {@code timeout}: records not handed to the broker by
     * then are not sent, and records without an acknowledgement by then are reported as failed
     * (a {@link java.util.concurrent.TimeoutException} is the usual failure).
     *
     * <p>The default calls {@link #publish(List)}; the dispatcher then bounds it by interrupting
     * the calling thread at the deadline.
     *
     * @param records the batch, in id order, never empty
     * @param timeout what is left of the batch's send timeout (positive)
     * @return which records failed, and why; all others count as acknowledged
     * @since 0.1.0
     */
    default PublishResult publish(List<OutboxRecord> records, Duration timeout) {
        return publish(records);
    }
}
