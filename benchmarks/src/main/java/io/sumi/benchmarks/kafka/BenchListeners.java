package io.sumi.benchmarks.kafka;

import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentHandler;
import io.sumi.outbox.OutboxHeaders;
import java.nio.charset.StandardCharsets;
import java.util.List;
import javax.sql.DataSource;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.integration.jdbc.metadata.JdbcMetadataStore;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;

/**
 * The application each case starts: Spring Boot with Sumi's starter, and the one listener the
 * case names ({@code bench.case}). Every listener reads the drain topic and the case's paced
 * topic with the case's group, 3 consumer threads ({@code spring.kafka.listener.concurrency}).
 *
 * <p>With {@code bench.work=true} every handler run also does the work a real listener does: one
 * row inserted into the table {@code bench.work} through the context's {@link JdbcTemplate} (so in
 * transactional mode it commits with Sumi's ledger row; in {@link HandRolled} and
 * {@link SpringIntegration}, the listeners that stand for what teams write instead of Sumi, only
 * for a key they take as new).
 */
@SpringBootConfiguration
@EnableAutoConfiguration
class BenchListeners {

    static final String TOPICS = "#{'${bench.topics}'.split(',')}";

    /** The work of one handler run: a row per record, or nothing ({@code bench.work=false}). */
    static final class Work {
        private final JdbcTemplate jdbc;
        private final boolean enabled;

        Work(JdbcTemplate jdbc, boolean enabled) {
            this.jdbc = jdbc;
            this.enabled = enabled;
        }

        void perform(ConsumerRecord<String, String> record) {
            if (enabled) {
                jdbc.update("INSERT INTO bench.work (message_key, payload) VALUES (?, ?)", key(record), record.value());
            }
        }
    }

    static String key(ConsumerRecord<?, ?> record) {
        Header header = record.headers().lastHeader(OutboxHeaders.OUTBOX_ID);
        return new String(header.value(), StandardCharsets.UTF_8);
    }

    /** No Sumi: the baseline ({@code bare}; with the work, {@code bare-work}). */
    static class Bare {
        private final Work work;

        Bare(Work work) {
            this.work = work;
        }

        @KafkaListener(id = "bench", topics = TOPICS, groupId = "${bench.group}")
        void handle(ConsumerRecord<String, String> record) {
            Recorder.handled(record);
            work.perform(record);
        }
    }

    /**
     * The write-up's consumer (seed article): look the key up in a {@code processed_messages} table
     * of its own, work, then insert the key, each statement in autocommit. Two copies that arrive
     * at once both pass the look-up and both work: the race Sumi's claim closes, counted as repeated
     * effects in the results.
     */
    static class HandRolled {
        private final JdbcTemplate jdbc;
        private final Work work;

        HandRolled(JdbcTemplate jdbc, Work work) {
            this.jdbc = jdbc;
            this.work = work;
        }

        @KafkaListener(id = "bench", topics = TOPICS, groupId = "${bench.group}")
        void handle(ConsumerRecord<String, String> record) {
            Recorder.handled(record);
            String key = key(record);
            List<String> seen =
                    jdbc.queryForList("SELECT id FROM bench.processed_messages WHERE id = ?", String.class, key);
            if (!seen.isEmpty()) {
                return;
            }
            work.perform(record);
            jdbc.update(
                    "INSERT INTO bench.processed_messages (id, processed_at) VALUES (?, now()) ON CONFLICT (id) DO NOTHING",
                    key);
        }
    }

    /**
     * Spring Integration's idempotent-receiver store: {@link JdbcMetadataStore#putIfAbsent} per
     * record, work only when the key was new. A plain object, as in the ledger benchmark: its
     * {@code @Transactional} is not applied, so its one statement runs in autocommit (its fastest
     * form). The key is recorded before the work, so a failed work is never retried: at-most-once.
     */
    static class SpringIntegration {
        private final JdbcMetadataStore store;
        private final Work work;

        SpringIntegration(DataSource dataSource, Work work) {
            this.store = new JdbcMetadataStore(dataSource);
            this.store.setTablePrefix("bench.INT_");
            this.store.setRegion("bench");
            this.store.afterPropertiesSet();
            this.work = work;
        }

        @KafkaListener(id = "bench", topics = TOPICS, groupId = "${bench.group}")
        void handle(ConsumerRecord<String, String> record) {
            Recorder.handled(record);
            if (store.putIfAbsent(key(record), "1") == null) {
                work.perform(record);
            }
        }
    }

    static class RecordTransactional {
        private final Work work;

        RecordTransactional(Work work) {
            this.work = work;
        }

        @KafkaListener(id = "bench", topics = TOPICS, groupId = "${bench.group}")
        @IdempotentHandler(consumer = "bench", mode = IdempotencyMode.TRANSACTIONAL)
        void handle(ConsumerRecord<String, String> record) {
            Recorder.handled(record);
            work.perform(record);
        }
    }

    /** Record lease; with {@code sumi.kafka.poll-claim=true} also the poll-level claim. */
    static class RecordLease {
        private final Work work;

        RecordLease(Work work) {
            this.work = work;
        }

        @KafkaListener(id = "bench", topics = TOPICS, groupId = "${bench.group}")
        @IdempotentHandler(consumer = "bench", mode = IdempotencyMode.LEASE)
        void handle(ConsumerRecord<String, String> record) {
            Recorder.handled(record);
            work.perform(record);
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
    Work work(JdbcTemplate jdbc, @Value("${bench.work:false}") boolean enabled) {
        return new Work(jdbc, enabled);
    }

    @Bean
    @ConditionalOnProperty(name = "bench.listener", havingValue = "bare")
    Bare bare(Work work) {
        return new Bare(work);
    }

    @Bean
    @ConditionalOnProperty(name = "bench.listener", havingValue = "hand-rolled")
    HandRolled handRolled(JdbcTemplate jdbc, Work work) {
        return new HandRolled(jdbc, work);
    }

    @Bean
    @ConditionalOnProperty(name = "bench.listener", havingValue = "spring-integration")
    SpringIntegration springIntegration(DataSource dataSource, Work work) {
        return new SpringIntegration(dataSource, work);
    }

    @Bean
    @ConditionalOnProperty(name = "bench.listener", havingValue = "record-tx")
    RecordTransactional recordTransactional(Work work) {
        return new RecordTransactional(work);
    }

    @Bean
    @ConditionalOnProperty(name = "bench.listener", havingValue = "record-lease")
    RecordLease recordLease(Work work) {
        return new RecordLease(work);
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
