package io.sumi.kafka.share.conformance;

import io.sumi.conformance.Work;
import io.sumi.consumer.IdempotencyContext;
import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentHandler;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.support.ShareAcknowledgment;
import org.springframework.transaction.annotation.Transactional;

/**
 * One share-group listener per role, as an application writes them (docs/kafka-share-groups.md):
 * each its own share group, named as the listener, on {@code cat.share.<role>}. The plain controls
 * are in {@link PlainShareListeners}: Sumi guards every share container whose bean has an
 * {@code @IdempotentHandler} method.
 */
public class ShareListeners {

    private final Work work;

    public ShareListeners(Work work) {
        this.work = work;
    }

    @KafkaListener(
            id = "kafka-share-lease",
            groupId = "kafka-share-lease",
            topics = "cat.share.lease",
            containerFactory = "shareFactory")
    @IdempotentHandler(consumer = "kafka-share-lease", mode = IdempotencyMode.LEASE)
    public void lease(ConsumerRecord<String, String> record) {
        work.run(record.value(), IdempotencyContext.current().key(), false);
    }

    @KafkaListener(
            id = "kafka-share-held",
            groupId = "kafka-share-held",
            topics = "cat.share.held",
            containerFactory = "shareFactory")
    @IdempotentHandler(consumer = "kafka-share-held", mode = IdempotencyMode.LEASE)
    public void held(ConsumerRecord<String, String> record) {
        work.run(record.value(), IdempotencyContext.current().key(), false);
    }

    @KafkaListener(
            id = "kafka-share-tx",
            groupId = "kafka-share-tx",
            topics = "cat.share.tx",
            containerFactory = "shareFactory")
    @IdempotentHandler(consumer = "kafka-share-tx", mode = IdempotencyMode.TRANSACTIONAL)
    @Transactional
    public void tx(ConsumerRecord<String, String> record) {
        work.run(record.value(), IdempotencyContext.current().key(), true);
    }

    /** A nack is {@code release()}: the record is delivered again (counted). */
    @KafkaListener(
            id = "kafka-share-manual",
            groupId = "kafka-share-manual",
            topics = "cat.share.manual",
            containerFactory = "shareFactory")
    @IdempotentHandler(consumer = "kafka-share-manual", mode = IdempotencyMode.LEASE)
    public void manual(ConsumerRecord<String, String> record, ShareAcknowledgment acknowledgment) {
        if (work.nacks(record.value())) {
            acknowledgment.release();
            return;
        }
        work.run(record.value(), IdempotencyContext.current().key(), false);
        acknowledgment.acknowledge();
    }

    @KafkaListener(
            id = "kafka-share-stop",
            groupId = "kafka-share-stop",
            topics = "cat.share.stop",
            containerFactory = "shareSingleFactory")
    @IdempotentHandler(consumer = "kafka-share-stop", mode = IdempotencyMode.LEASE)
    public void stop(ConsumerRecord<String, String> record) {
        work.run(record.value(), IdempotencyContext.current().key(), false);
    }

    @KafkaListener(
            id = "kafka-share-budget",
            groupId = "kafka-share-budget",
            topics = "cat.share.budget",
            containerFactory = "shareSingleFactory")
    @IdempotentHandler(consumer = "kafka-share-budget", mode = IdempotencyMode.LEASE, budget = "kafka-share-budget")
    public void budget(ConsumerRecord<String, String> record) {
        work.run(record.value(), IdempotencyContext.current().key(), false);
    }

    /** The ledger-down scenarios' listener: a short lease, a container they stop and start. */
    @KafkaListener(
            id = "kafka-share-ledger-down",
            groupId = "kafka-share-ledger-down",
            topics = "cat.share.ledger-down",
            containerFactory = "shareFactory")
    @IdempotentHandler(consumer = "kafka-share-ledger-down", mode = IdempotencyMode.LEASE, lease = "3s")
    public void ledgerDown(ConsumerRecord<String, String> record) {
        work.run(record.value(), IdempotencyContext.current().key(), false);
    }
}
