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
 * the application's DataSource, the template they send with and the ledger they look at. Each
 * subclass keeps its own {@code @SpringBootTest} properties and {@code @EmbeddedKafka}.
 */
abstract class KafkaStarterTestBase {

    @DynamicPropertySource
    static void database(DynamicPropertyRegistry registry) {
        TestDatabase.POSTGRESQL.registerDataSource(registry::add);
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
