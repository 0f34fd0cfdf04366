package io.sumi.autoconfigure;

import io.sumi.store.ProcessedMessageStore;
import io.sumi.testing.TestDatabase;
import java.nio.charset.StandardCharsets;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * What the starter's Kafka integration tests share: the local PostgreSQL ({@link TestDatabase}) as
 * the application's DataSource, a short {@code fetch.max.wait.ms} (retries seek back and re-fetch),
 * the template they send with and the ledger they look at. Each subclass keeps its own
 * {@code @SpringBootTest} properties; the broker is the suite's one embedded broker
 * ({@code junit-platform.properties}), so each subclass uses topics and consumer groups of its own.
 */
abstract class KafkaStarterTestBase {

    @DynamicPropertySource
    static void database(DynamicPropertyRegistry registry) {
        TestDatabase.POSTGRESQL.registerDataSource(registry::add);
    }

    @DynamicPropertySource
    static void shortFetchWait(DynamicPropertyRegistry registry) {
        // Every retry (a busy key, a failure) seeks back, and the re-fetch waits for the fetch in
        // flight: at Kafka's 500 ms default each retry of these tests would take half a second.
        registry.add("spring.kafka.consumer.fetch-max-wait", () -> "50ms");
    }

    @Autowired
    KafkaTemplate<String, String> template;

    @Autowired
    ProcessedMessageStore store;

    /** A record of {@code key} whose idempotency key is the {@code outbox-id} header, as the outbox sends it. */
    static ProducerRecord<String, String> record(String topic, String key) {
        ProducerRecord<String, String> record = new ProducerRecord<>(topic, key, "payload of " + key);
        record.headers().add("outbox-id", key.getBytes(StandardCharsets.UTF_8));
        return record;
    }
}
