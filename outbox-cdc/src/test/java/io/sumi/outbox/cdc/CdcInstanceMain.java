package io.sumi.outbox.cdc;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.sumi.outbox.OutboxDispatcher;
import io.sumi.outbox.OutboxTable;
import io.sumi.outbox.kafka.KafkaOutboxPublisher;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * One application instance for the kill -9 test, in a JVM of its own: a CDC engine (no polling)
 * on the slot, printing {@code STREAMING} once it streams. Arguments: JDBC URL, user, slot,
 * Kafka bootstrap servers.
 */
public final class CdcInstanceMain {

    private CdcInstanceMain() {}

    public static void main(String[] args) throws Exception {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(args[0]);
        config.setUsername(args[1]);
        config.setMaximumPoolSize(4);
        HikariDataSource dataSource = new HikariDataSource(config);
        Map<String, Object> producer = new HashMap<>();
        producer.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args[3]);
        producer.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        producer.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        KafkaOutboxPublisher publisher = KafkaOutboxPublisher.create(producer, Duration.ofSeconds(10));
        OutboxDispatcher dispatcher = OutboxDispatcher.builder(OutboxTable.of(dataSource), publisher)
                .lease(Duration.ofSeconds(20))
                .sendTimeout(Duration.ofSeconds(10))
                .build();
        OutboxCdc cdc = OutboxCdc.builder(dispatcher, args[0])
                .user(args[1])
                .slotName(args[2])
                .publicationName(args[2])
                .takeOverInterval(Duration.ofMillis(500))
                .offsetFlushInterval(Duration.ZERO)
                .build();
        cdc.start();
        if (!cdc.awaitStreaming(Duration.ofMinutes(2))) {
            System.out.println("NOT STREAMING: " + cdc.lastFailure());
            System.exit(1);
        }
        System.out.println("STREAMING");
        System.out.flush();
        new CountDownLatch(1).await();
    }
}
