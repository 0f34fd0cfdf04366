package io.sumi.kafka.share.soak;

import io.sumi.consumer.IdempotencyContext;
import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentHandler;
import java.util.HashMap;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.context.annotation.Bean;
import org.springframework.context.event.EventListener;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.config.ShareKafkaListenerContainerFactory;
import org.springframework.kafka.core.DefaultShareConsumerFactory;
import org.springframework.transaction.annotation.Transactional;

/**
 * One application instance of the soak ({@link ShareGroupSoakTests}), a JVM of its own that the
 * test kills with {@code kill -9}: two share-group listeners of two consumers each, one in
 * transactional mode (its effect is a row written in the ledger's transaction), one in lease mode
 * (its effect a row written on its own, as a call to a provider would be, with the key passed
 * along). Each effect row names the key the handler saw and this instance.
 */
@SpringBootConfiguration(proxyBeanMethods = false)
@EnableAutoConfiguration
public class ShareSoakApp {

    static final String TX = "share-soak-tx";
    static final String LEASE = "share-soak-lease";
    static final String READY = "SHARE-SOAK READY";

    public static void main(String[] args) {
        SpringApplication.run(ShareSoakApp.class, args);
    }

    @Bean
    SoakListeners soakListeners(JdbcTemplate jdbc, @Value("${soak.instance}") String instance) {
        return new SoakListeners(jdbc, instance);
    }

    @Bean
    ShareKafkaListenerContainerFactory<String, String> soakFactory(
            @Value("${spring.kafka.bootstrap-servers}") String brokers) {
        Map<String, Object> config = new HashMap<>();
        config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
        config.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
        config.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
        // Small polls, as docs/kafka-share-groups.md advises for share listeners; record_limit makes
        // the 5 a bound (without it a fetch may acquire a whole producer batch: once every record
        // of the first half went to one instance's consumers).
        config.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 5);
        config.put("share.acquire.mode", "record_limit");
        ShareKafkaListenerContainerFactory<String, String> factory =
                new ShareKafkaListenerContainerFactory<>(new DefaultShareConsumerFactory<>(config));
        factory.setConcurrency(2);
        return factory;
    }

    @EventListener(ApplicationReadyEvent.class)
    void ready() {
        System.out.println(READY);
    }

    /** The two listeners; each handler takes a few milliseconds, so a kill finds work in flight. */
    public static class SoakListeners {

        private final JdbcTemplate jdbc;
        private final String instance;

        SoakListeners(JdbcTemplate jdbc, String instance) {
            this.jdbc = jdbc;
            this.instance = instance;
        }

        @KafkaListener(id = TX, groupId = TX, topics = TX, containerFactory = "soakFactory")
        @IdempotentHandler(consumer = TX, mode = IdempotencyMode.TRANSACTIONAL)
        @Transactional
        public void transactional(ConsumerRecord<String, String> record) throws InterruptedException {
            effect(TX);
        }

        @KafkaListener(id = LEASE, groupId = LEASE, topics = LEASE, containerFactory = "soakFactory")
        @IdempotentHandler(consumer = LEASE, mode = IdempotencyMode.LEASE, lease = "3s")
        public void lease(ConsumerRecord<String, String> record) throws InterruptedException {
            effect(LEASE);
        }

        private void effect(String listener) throws InterruptedException {
            Thread.sleep(15);
            jdbc.update(
                    "INSERT INTO share_soak_effects (listener, message_key, instance) VALUES (?, ?, ?)",
                    listener,
                    IdempotencyContext.current().key(),
                    instance);
        }
    }
}
