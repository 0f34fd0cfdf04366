package io.sumi.benchmarks.kafka;

import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentHandler;
import java.util.List;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.kafka.annotation.KafkaListener;

/**
 * The application each case starts: Spring Boot with Sumi's starter, and the one listener the
 * case names ({@code bench.case}). Every listener reads the drain topic and the case's paced
 * topic with the case's group, 3 consumer threads ({@code spring.kafka.listener.concurrency}).
 */
@SpringBootConfiguration
@EnableAutoConfiguration
class BenchListeners {

    static final String TOPICS = "#{'${bench.topics}'.split(',')}";

    /** No Sumi: the baseline. */
    static class Bare {
        @KafkaListener(id = "bench", topics = TOPICS, groupId = "${bench.group}")
        void handle(ConsumerRecord<String, String> record) {
            Recorder.handled(record);
        }
    }

    static class RecordTransactional {
        @KafkaListener(id = "bench", topics = TOPICS, groupId = "${bench.group}")
        @IdempotentHandler(consumer = "bench", mode = IdempotencyMode.TRANSACTIONAL)
        void handle(ConsumerRecord<String, String> record) {
            Recorder.handled(record);
        }
    }

    /** Record lease; with {@code sumi.kafka.poll-claim=true} also the poll-level claim. */
    static class RecordLease {
        @KafkaListener(id = "bench", topics = TOPICS, groupId = "${bench.group}")
        @IdempotentHandler(consumer = "bench", mode = IdempotencyMode.LEASE)
        void handle(ConsumerRecord<String, String> record) {
            Recorder.handled(record);
        }
    }

    static class BatchLease {
        @KafkaListener(id = "bench", topics = TOPICS, groupId = "${bench.group}", batch = "true")
        @IdempotentHandler(consumer = "bench", mode = IdempotencyMode.LEASE)
        void handle(List<ConsumerRecord<String, String>> records) {
            records.forEach(Recorder::handled);
        }
    }

    static class BatchTransactional {
        @KafkaListener(id = "bench", topics = TOPICS, groupId = "${bench.group}", batch = "true")
        @IdempotentHandler(consumer = "bench", mode = IdempotencyMode.TRANSACTIONAL)
        void handle(List<ConsumerRecord<String, String>> records) {
            records.forEach(Recorder::handled);
        }
    }

    @Bean
    @ConditionalOnProperty(name = "bench.listener", havingValue = "bare")
    Bare bare() {
        return new Bare();
    }

    @Bean
    @ConditionalOnProperty(name = "bench.listener", havingValue = "record-tx")
    RecordTransactional recordTransactional() {
        return new RecordTransactional();
    }

    @Bean
    @ConditionalOnProperty(name = "bench.listener", havingValue = "record-lease")
    RecordLease recordLease() {
        return new RecordLease();
    }

    @Bean
    @ConditionalOnProperty(name = "bench.listener", havingValue = "batch-lease")
    BatchLease batchLease() {
        return new BatchLease();
    }

    @Bean
    @ConditionalOnProperty(name = "bench.listener", havingValue = "batch-tx")
    BatchTransactional batchTransactional() {
        return new BatchTransactional();
    }
}
