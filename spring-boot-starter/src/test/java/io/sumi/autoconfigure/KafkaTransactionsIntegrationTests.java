package io.sumi.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sumi.consumer.IdempotencyContext;
import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentHandler;
import io.sumi.store.ClaimOutcome;
import io.sumi.store.ClaimRequest;
import io.sumi.store.ClaimResult;
import io.sumi.store.MessageStatus;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Primary;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.support.JdbcTransactionManager;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.core.KafkaAdmin;
import org.springframework.transaction.annotation.Transactional;

/**
 * Spring Boot's usual Kafka-transactions wiring ({@code spring.kafka.producer.transaction-id-prefix}
 * set, so every container runs its listener in a Kafka transaction) with a {@code @Transactional}
 * JDBC listener: Sumi's ledger row joins the JDBC transaction (issue 8, defect 3: keep it working),
 * and a busy key in such a container goes to the after-rollback processor, which must retry it
 * rather than skip it after Spring Kafka's default ten attempts (defect 1).
 */
@SpringBootTest(
        classes = KafkaTransactionsIntegrationTests.App.class,
        properties = {
            "spring.kafka.producer.transaction-id-prefix=sumi-tx-",
            "spring.kafka.consumer.isolation-level=read_committed",
            "spring.kafka.consumer.auto-offset-reset=earliest",
            "spring.kafka.listener.concurrency=1",
            "spring.flyway.locations=classpath:db/sumi/{vendor}",
            "sumi.kafka.busy-retry-interval=50ms",
            "sumi.consumer.lease=30s"
        })
class KafkaTransactionsIntegrationTests extends KafkaStarterTestBase {

    @Autowired
    JdbcTemplate jdbc;

    @Autowired
    MeterRegistry meters;

    @Autowired
    Listeners listeners;

    static ProducerRecord<String, String> record(String topic, String key) {
        ProducerRecord<String, String> record = new ProducerRecord<>(topic, key, "payload of " + key);
        record.headers().add("outbox-id", key.getBytes(StandardCharsets.UTF_8));
        return record;
    }

    void send(List<ProducerRecord<String, String>> records) {
        template.executeInTransaction(operations -> {
            records.forEach(operations::send);
            return null;
        });
    }

    double count(String consumer, String outcome) {
        io.micrometer.core.instrument.Counter counter = meters.find("sumi.messages")
                .tag("consumer", consumer)
                .tag("outcome", outcome)
                .counter();
        return counter == null ? 0 : counter.count();
    }

    @Test
    void aTransactionalJdbcListenerInsideTheContainersKafkaTransactionWritesEachEffectOnce() {
        List<ProducerRecord<String, String>> records = new java.util.ArrayList<>();
        for (int i = 0; i < 10; i++) {
            records.add(record("tx.orders", "o" + i));
            records.add(record("tx.orders", "o" + i)); // every record twice
        }
        send(records);

        await().atMost(Duration.ofSeconds(30))
                .until(() -> count("tx-orders", "processed") == 10 && count("tx-orders", "duplicate") == 10);
        List<Map<String, Object>> rows =
                jdbc.queryForList("SELECT message_id, COUNT(*) AS n FROM sumi_test_tx_effects GROUP BY message_id");
        assertThat(rows)
                .hasSize(10)
                .allSatisfy(
                        row -> assertThat(((Number) row.get("n")).intValue()).isEqualTo(1));
        // o3 failed after writing its row: the row and the ledger row rolled back, the record came again.
        assertThat(listeners.runsOfO3()).isEqualTo(2);
        assertThat(store.find("tx-orders", "o3")).get().satisfies(row -> {
            assertThat(row.status()).isEqualTo(MessageStatus.COMPLETED);
        });
    }

    @Test
    void busyKeyIsRetriedByTheAfterRollbackProcessor() {
        ClaimResult dead = store.claim("tx-lease", new ClaimRequest("l1", null), Duration.ofMinutes(5));
        assertThat(dead.outcome()).isEqualTo(ClaimOutcome.CLAIMED);
        send(List.of(record("tx.lease", "l1")));

        await().atMost(Duration.ofSeconds(20)).until(() -> count("tx-lease", "busy") >= 12);
        assertThat(listeners.leaseRuns()).isZero();
        assertThat(store.release(dead.message(), "instance A was killed")).isTrue();
        await().atMost(Duration.ofSeconds(20)).until(() -> listeners.leaseRuns() == 1);
        // The completion is written after the handler returns: wait for it rather than read it at once.
        await().atMost(Duration.ofSeconds(20))
                .until(() -> store.find("tx-lease", "l1")
                        .map(row -> row.status() == MessageStatus.COMPLETED)
                        .orElse(false));
        assertThat(listeners.leaseRuns()).isEqualTo(1);
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class App {

        @Bean
        MeterRegistry meterRegistry() {
            return new SimpleMeterRegistry();
        }

        /** As users do with transaction-id-prefix: Boot's Kafka transaction manager would otherwise be the only one. */
        @Bean
        @Primary
        JdbcTransactionManager transactionManager(DataSource dataSource) {
            return new JdbcTransactionManager(dataSource);
        }

        @Bean
        KafkaAdmin.NewTopics topics() {
            return new KafkaAdmin.NewTopics(
                    new NewTopic("tx.orders", 1, (short) 1), new NewTopic("tx.lease", 1, (short) 1));
        }

        @Bean
        Listeners listeners(JdbcTemplate jdbc) {
            jdbc.execute("CREATE TABLE IF NOT EXISTS sumi_test_tx_effects (message_id VARCHAR(200), at TIMESTAMP)");
            jdbc.update("DELETE FROM sumi_test_tx_effects");
            jdbc.update("DELETE FROM processed_messages WHERE consumer IN ('tx-orders', 'tx-lease')");
            return new Listeners(jdbc);
        }
    }

    static class Listeners {

        final AtomicInteger runsOfO3 = new AtomicInteger();
        final AtomicInteger leaseRuns = new AtomicInteger();
        private final JdbcTemplate jdbc;

        Listeners(JdbcTemplate jdbc) {
            this.jdbc = jdbc;
        }

        // Methods, not fields: the test sees the bean through its (class-based) proxy.
        public int runsOfO3() {
            return runsOfO3.get();
        }

        public int leaseRuns() {
            return leaseRuns.get();
        }

        @KafkaListener(id = "tx-orders", topics = "tx.orders")
        @IdempotentHandler
        @Transactional
        public void onOrder(String payload) {
            String key = IdempotencyContext.current().key();
            assertThat(IdempotencyContext.current().mode()).isEqualTo(IdempotencyMode.TRANSACTIONAL);
            jdbc.update("INSERT INTO sumi_test_tx_effects (message_id, at) VALUES (?, CURRENT_TIMESTAMP)", key);
            if (key.equals("o3") && runsOfO3.getAndIncrement() == 0) {
                throw new IllegalStateException("fails after writing its row");
            }
        }

        @KafkaListener(id = "tx-lease", topics = "tx.lease")
        @IdempotentHandler(mode = IdempotencyMode.LEASE)
        public void onLease(String payload) {
            leaseRuns.incrementAndGet();
        }
    }
}
