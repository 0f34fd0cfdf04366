package io.sumi.conformance.kafka;

import io.sumi.conformance.Work;
import io.sumi.consumer.IdempotencyContext;
import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentHandler;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;
import org.jspecify.annotations.Nullable;
import org.springframework.kafka.annotation.BackOff;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.annotation.RetryableTopic;
import org.springframework.kafka.support.Acknowledgment;
import org.springframework.transaction.annotation.Transactional;

/** One record listener per role, as an application writes them; the PLAIN ones without Sumi. */
public class KafkaRecordListeners {

    private final Work work;

    public KafkaRecordListeners(Work work) {
        this.work = work;
    }

    static @Nullable String keyHeader(ConsumerRecord<?, ?> record) {
        Header header = record.headers().lastHeader("idempotency-key");
        return header == null ? null : new String(header.value(), StandardCharsets.UTF_8);
    }

    @KafkaListener(id = "kafka-record-lease", topics = "cat.record.lease", concurrency = "2")
    @IdempotentHandler(mode = IdempotencyMode.LEASE)
    public void lease(ConsumerRecord<String, String> record) {
        work.run(record.value(), IdempotencyContext.current().key(), false);
    }

    @KafkaListener(id = "kafka-record-plain", topics = "cat.record.plain", concurrency = "2")
    public void plain(ConsumerRecord<String, String> record) {
        work.run(record.value(), keyHeader(record), false);
    }

    @KafkaListener(id = "kafka-record-held", topics = "cat.record.held", containerFactory = "noRetryFactory")
    @IdempotentHandler(mode = IdempotencyMode.LEASE)
    public void held(ConsumerRecord<String, String> record) {
        work.run(record.value(), IdempotencyContext.current().key(), false);
    }

    @KafkaListener(
            id = "kafka-record-plain-held",
            topics = "cat.record.plain-held",
            containerFactory = "noRetryFactory")
    public void plainHeld(ConsumerRecord<String, String> record) {
        work.run(record.value(), keyHeader(record), false);
    }

    // The TRANSACTIONAL one is in KafkaTransactionalListeners: a Redis ledger refuses it at start-up.

    @KafkaListener(id = "kafka-record-plain-tx", topics = "cat.record.plain-tx")
    @Transactional
    public void plainTx(ConsumerRecord<String, String> record) {
        work.run(record.value(), keyHeader(record), true);
    }

    @KafkaListener(id = "kafka-record-manual", topics = "cat.record.manual", containerFactory = "manualFactory")
    @IdempotentHandler(mode = IdempotencyMode.LEASE)
    public void manual(ConsumerRecord<String, String> record, Acknowledgment ack) {
        if (work.nacks(record.value())) {
            ack.nack(Duration.ofMillis(100));
            return;
        }
        work.run(record.value(), IdempotencyContext.current().key(), false);
        ack.acknowledge();
    }

    /*
     * Async listeners retry through retry topics (@RetryableTopic), as Spring Kafka recommends for
     * async returns and as the issue tried: a DefaultErrorHandler did not redeliver a failed future in
     * this wiring, even without Sumi (the control failed), so it could not show anything. Sumi
     * starts a guarded async listener only with sumi.kafka.allow-async-listeners=true (set by
     * KafkaCatalogueTests for every Kafka kind): Spring Kafka commits a failed future's offset
     * before its retry is published.
     */
    @KafkaListener(id = "kafka-record-async", topics = "cat.record.async")
    @RetryableTopic(attempts = "3", backOff = @BackOff(delay = 100), numPartitions = "2")
    @IdempotentHandler(mode = IdempotencyMode.LEASE)
    public CompletableFuture<Void> async(ConsumerRecord<String, String> record) {
        String key = IdempotencyContext.current().key();
        return CompletableFuture.runAsync(() -> work.run(record.value(), key, false));
    }

    @KafkaListener(id = "kafka-record-plain-async", topics = "cat.record.plain-async")
    @RetryableTopic(attempts = "3", backOff = @BackOff(delay = 100), numPartitions = "2")
    public CompletableFuture<Void> plainAsync(ConsumerRecord<String, String> record) {
        String key = keyHeader(record);
        return CompletableFuture.runAsync(() -> work.run(record.value(), key, false));
    }

    @KafkaListener(id = "kafka-record-stop", topics = "cat.record.stop")
    @IdempotentHandler(mode = IdempotencyMode.LEASE)
    public void stop(ConsumerRecord<String, String> record) {
        work.run(record.value(), IdempotencyContext.current().key(), false);
    }

    @KafkaListener(id = "kafka-record-budget", topics = "cat.record.budget")
    @IdempotentHandler(mode = IdempotencyMode.LEASE, budget = "kafka-record-budget")
    public void budget(ConsumerRecord<String, String> record) {
        work.run(record.value(), IdempotencyContext.current().key(), false);
    }

    /** The ledger-down scenarios' listener: a short lease, a container they stop and start. */
    @KafkaListener(id = "kafka-record-ledger-down", topics = "cat.record.ledger-down")
    @IdempotentHandler(mode = IdempotencyMode.LEASE, lease = "3s")
    public void ledgerDown(ConsumerRecord<String, String> record) {
        work.run(record.value(), IdempotencyContext.current().key(), false);
    }

    /** The dead letters of every catalogue topic, read back into {@link Work}. */
    @KafkaListener(id = "catalogue-dead-letters", topicPattern = "cat\\..*-dlt")
    public void deadLetter(ConsumerRecord<String, String> record) {
        Header exception = record.headers().lastHeader("kafka_dlt-exception-message");
        Header fqcn = record.headers().lastHeader("kafka_dlt-exception-fqcn");
        work.deadLettered(
                record.value(),
                (fqcn == null ? "" : new String(fqcn.value(), StandardCharsets.UTF_8) + ": ")
                        + (exception == null ? "" : new String(exception.value(), StandardCharsets.UTF_8)));
    }
}
