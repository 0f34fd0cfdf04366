package io.sumi.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.sumi.consumer.IdempotencyContext;
import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentHandler;
import io.sumi.store.MessageStatus;
import io.sumi.store.ProcessedMessageStore;
import io.sumi.testing.TestDatabase;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
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
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.core.KafkaAdmin;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.test.context.EmbeddedKafka;
import org.springframework.kafka.transaction.KafkaTransactionManager;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * Spring Boot's usual Kafka-transactions wiring (issue 8, defect 3): {@code transaction-id-prefix}
 * set, so the listener container runs each delivery in a Kafka transaction, and a
 * {@code @Transactional} JDBC listener inside it. The ledger row must join the JDBC transaction,
 * not the Kafka one: a failed delivery rolls back the business row and the ledger row together,
 * and the redelivery runs the handler again.
 */
@SpringBootTest(classes = KafkaTransactionsIntegrationTests.App.class, properties = {
        "spring.kafka.producer.transaction-id-prefix=sumi-tx-",
        "spring.kafka.producer.key-serializer=org.apache.kafka.common.serialization.StringSerializer",
        "spring.kafka.producer.value-serializer=org.apache.kafka.common.serialization.StringSerializer",
        "spring.kafka.consumer.key-deserializer=org.apache.kafka.common.serialization.StringDeserializer",
        "spring.kafka.consumer.value-deserializer=org.apache.kafka.common.serialization.StringDeserializer",
        "spring.kafka.consumer.auto-offset-reset=earliest",
        "spring.kafka.consumer.isolation-level=read_committed",
        "spring.flyway.locations=classpath:db/sumi/{vendor}"})
@EmbeddedKafka(partitions = 1, bootstrapServersProperty = "spring.kafka.bootstrap-servers")
class KafkaTransactionsIntegrationTests {

    @DynamicPropertySource
    static void database(DynamicPropertyRegistry registry) {
        String[] settings = TestDatabase.POSTGRESQL.settings();
        registry.add("spring.datasource.url", () -> settings[0]);
        registry.add("spring.datasource.username", () -> settings[1]);
        registry.add("spring.datasource.password", () -> settings[2]);
    }

    @Autowired
    KafkaTemplate<String, String> template;

    @Autowired
    JdbcTemplate jdbc;

    @Autowired
    ProcessedMessageStore store;

    @Autowired
    Listener listener;

    @Autowired
    KafkaTransactionManager<?, ?> kafkaTransactionManager;

    @Test
    void aTransactionalJdbcListenerInsideTheContainersKafkaTransactionCommitsAndRollsBackWithTheLedger() {
        template.executeInTransaction(t -> {
            for (int i = 0; i < 5; i++) {
                ProducerRecord<String, String> record = new ProducerRecord<>("ktx.topic", "k" + i, "v" + i);
                record.headers().add("outbox-id", ("k" + i).getBytes(StandardCharsets.UTF_8));
                t.send(record);
            }
            return null;
        });

        await().atMost(Duration.ofSeconds(30)).until(() -> jdbc.queryForObject(
                "SELECT COUNT(*) FROM sumi_ktx_effects", Integer.class) == 5 && listener.runs("k2") == 2);

        List<Map<String, Object>> rows = jdbc.queryForList("SELECT message_id, COUNT(*) AS n FROM sumi_ktx_effects GROUP BY message_id");
        assertThat(rows).hasSize(5).allSatisfy(row -> assertThat(((Number) row.get("n")).intValue()).isEqualTo(1));
        assertThat(listener.runs("k2")).as("k2 failed once after writing its row, then ran again").isEqualTo(2);
        assertThat(store.find("ktx-listener", "k2")).get().extracting(row -> row.status()).isEqualTo(MessageStatus.COMPLETED);
        assertThat(listener.modes()).containsOnlyKeys("TRANSACTIONAL");
        assertThat(listener.kafkaTransactionSeen()).as("the container ran the listener in a Kafka transaction").isPositive();
    }

    static class Listener {

        final JdbcTemplate jdbc;
        final KafkaTransactionManager<?, ?> kafka;
        final Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
        final Map<String, Boolean> modes = new ConcurrentHashMap<>();
        final AtomicInteger kafkaTransactionSeen = new AtomicInteger();

        Listener(JdbcTemplate jdbc, KafkaTransactionManager<?, ?> kafka) {
            this.jdbc = jdbc;
            this.kafka = kafka;
        }

        // The bean is an AOP proxy: tests read its state through methods, not fields.
        Map<String, Boolean> modes() {
            return modes;
        }

        int kafkaTransactionSeen() {
            return kafkaTransactionSeen.get();
        }

        int runs(String key) {
            AtomicInteger count = runs.get(key);
            return count == null ? 0 : count.get();
        }

        @KafkaListener(id = "ktx-listener", topics = "ktx.topic")
        @IdempotentHandler
        @Transactional
        public void onRecord(String payload) {
            String key = IdempotencyContext.current().key();
            modes.put(IdempotencyContext.current().mode().name(), true);
            if (TransactionSynchronizationManager.getResource(kafka.getProducerFactory()) != null) {
                kafkaTransactionSeen.incrementAndGet();
            }
            jdbc.update("INSERT INTO sumi_ktx_effects (message_id) VALUES (?)", key);
            if (runs.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet() == 1 && key.equals("k2")) {
                throw new IllegalStateException("k2 fails once after writing its row");
            }
        }
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class App {

        /** The JDBC manager is the default one for @Transactional; Kafka's sits beside it (Boot's). */
        @Bean
        @Primary
        DataSourceTransactionManager transactionManager(DataSource dataSource) {
            return new DataSourceTransactionManager(dataSource);
        }

        @Bean
        Listener listener(JdbcTemplate jdbc, KafkaTransactionManager<?, ?> kafka) {
            jdbc.execute("CREATE TABLE IF NOT EXISTS sumi_ktx_effects (message_id VARCHAR(200))");
            jdbc.update("DELETE FROM sumi_ktx_effects");
            jdbc.update("DELETE FROM processed_messages WHERE consumer = 'ktx-listener'");
            return new Listener(jdbc, kafka);
        }

        @Bean
        KafkaAdmin.NewTopics topics() {
            return new KafkaAdmin.NewTopics(new NewTopic("ktx.topic", 1, (short) 1));
        }
    }
}
