package io.sumi.conformance.kafka;

import io.sumi.conformance.Work;
import io.sumi.consumer.IdempotencyContext;
import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentHandler;
import java.util.List;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.transaction.annotation.Transactional;

/**
 * The TRANSACTIONAL record and batch listeners ({@link io.sumi.conformance.Role#TX}). Left out of a
 * context whose ledger cannot join a transaction ({@code catalogue.transactional-listeners=false}:
 * the Redis kinds), where Sumi refuses them at start-up; their plain controls stay.
 */
@ConditionalOnProperty(name = "catalogue.transactional-listeners", havingValue = "true", matchIfMissing = true)
public class KafkaTransactionalListeners {

    private final Work work;
    private final KafkaBatchListeners batches;

    public KafkaTransactionalListeners(Work work, KafkaBatchListeners batches) {
        this.work = work;
        this.batches = batches;
    }

    @KafkaListener(id = "kafka-record-tx", topics = "cat.record.tx")
    @IdempotentHandler(mode = IdempotencyMode.TRANSACTIONAL)
    @Transactional
    public void record(ConsumerRecord<String, String> record) {
        work.run(record.value(), IdempotencyContext.current().key(), true);
    }

    @KafkaListener(id = "kafka-batch-tx", topics = "cat.batch.tx", containerFactory = "batchFactory")
    @IdempotentHandler(mode = IdempotencyMode.TRANSACTIONAL)
    @Transactional
    public void batch(List<ConsumerRecord<String, String>> records) {
        batches.runAll(records, true, true);
    }
}
