package io.sumi.conformance.kafka;

import static io.sumi.conformance.kafka.KafkaRecordListeners.keyHeader;

import io.sumi.conformance.Work;
import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentHandler;
import java.time.Duration;
import java.util.List;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.jspecify.annotations.Nullable;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.listener.BatchListenerFailedException;
import org.springframework.kafka.support.Acknowledgment;
import org.springframework.transaction.annotation.Transactional;

/**
 * One batch listener per role. A record that fails fails the batch at its index
 * ({@link BatchListenerFailedException}), as docs/kafka.md says to.
 */
public class KafkaBatchListeners {

    private final Work work;

    public KafkaBatchListeners(Work work) {
        this.work = work;
    }

    void runAll(List<ConsumerRecord<String, String>> records, boolean sumi, boolean jdbc) {
        for (int i = 0; i < records.size(); i++) {
            ConsumerRecord<String, String> record = records.get(i);
            try {
                work.run(record.value(), key(record, sumi), jdbc);
            } catch (RuntimeException ex) {
                throw new BatchListenerFailedException(ex.getMessage(), ex, i);
            }
        }
    }

    /** The record's key as the handler sees it: Sumi's context while it runs a batch, else the header. */
    private static @Nullable String key(ConsumerRecord<String, String> record, boolean sumi) {
        // A batch handler has no per-record IdempotencyContext: the header is the key Sumi claimed.
        return keyHeader(record);
    }

    @KafkaListener(
            id = "kafka-batch-lease",
            topics = "cat.batch.lease",
            concurrency = "2",
            containerFactory = "batchFactory")
    @IdempotentHandler(mode = IdempotencyMode.LEASE)
    public void lease(List<ConsumerRecord<String, String>> records) {
        runAll(records, true, false);
    }

    @KafkaListener(
            id = "kafka-batch-plain",
            topics = "cat.batch.plain",
            concurrency = "2",
            containerFactory = "batchFactory")
    public void plain(List<ConsumerRecord<String, String>> records) {
        runAll(records, false, false);
    }

    @KafkaListener(id = "kafka-batch-held", topics = "cat.batch.held", containerFactory = "noRetryBatchFactory")
    @IdempotentHandler(mode = IdempotencyMode.LEASE)
    public void held(List<ConsumerRecord<String, String>> records) {
        runAll(records, true, false);
    }

    @KafkaListener(
            id = "kafka-batch-plain-held",
            topics = "cat.batch.plain-held",
            containerFactory = "noRetryBatchFactory")
    public void plainHeld(List<ConsumerRecord<String, String>> records) {
        runAll(records, false, false);
    }

    // The TRANSACTIONAL one is in KafkaTransactionalListeners: a Redis ledger refuses it at start-up.

    @KafkaListener(id = "kafka-batch-plain-tx", topics = "cat.batch.plain-tx", containerFactory = "batchFactory")
    @Transactional
    public void plainTx(List<ConsumerRecord<String, String>> records) {
        runAll(records, false, true);
    }

    @KafkaListener(id = "kafka-batch-manual", topics = "cat.batch.manual", containerFactory = "manualBatchFactory")
    @IdempotentHandler(mode = IdempotencyMode.LEASE)
    public void manual(List<ConsumerRecord<String, String>> records, Acknowledgment ack) {
        for (int i = 0; i < records.size(); i++) {
            ConsumerRecord<String, String> record = records.get(i);
            if (work.nacks(record.value())) {
                ack.nack(i, Duration.ofMillis(100));
                return;
            }
            work.run(record.value(), keyHeader(record), false);
        }
        ack.acknowledge();
    }

    /** The ledger-down scenarios' listener: a short lease, a container they stop and start. */
    @KafkaListener(id = "kafka-batch-ledger-down", topics = "cat.batch.ledger-down", containerFactory = "batchFactory")
    @IdempotentHandler(mode = IdempotencyMode.LEASE, lease = "3s")
    public void ledgerDown(List<ConsumerRecord<String, String>> records) {
        runAll(records, true, false);
    }

    @KafkaListener(id = "kafka-batch-stop", topics = "cat.batch.stop", containerFactory = "batchFactory")
    @IdempotentHandler(mode = IdempotencyMode.LEASE)
    public void stop(List<ConsumerRecord<String, String>> records) {
        runAll(records, true, false);
    }

    @KafkaListener(id = "kafka-batch-budget", topics = "cat.batch.budget", containerFactory = "batchFactory")
    @IdempotentHandler(mode = IdempotencyMode.LEASE, budget = "kafka-batch-budget")
    public void budget(List<ConsumerRecord<String, String>> records) {
        runAll(records, true, false);
    }
}
