package io.sumi.test;

import io.sumi.consumer.IdempotencyContext;
import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentHandler;
import io.sumi.testing.TestDatabase;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.listener.DeadLetterPublishingRecoverer;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.util.backoff.FixedBackOff;

/**
 * The application the kit's Kafka tests run against: the same mail listener twice, once guarded
 * by Sumi ({@code kit-idempotent}) and once without ({@code kit-plain}, the negative control), an
 * error handler that retries twice and dead-letters to {@code <topic>-dlt}, and the local
 * PostgreSQL.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
public class KitTestApplication {

    static final String[] TOPICS = {"kit.idempotent", "kit.plain", "kit.idempotent-dlt", "kit.plain-dlt"};

    /** The spring properties every kit test context shares. */
    static final String[] PROPERTIES = {
        "spring.kafka.consumer.auto-offset-reset=earliest",
        "spring.kafka.listener.concurrency=3",
        "spring.kafka.consumer.key-deserializer=org.apache.kafka.common.serialization.StringDeserializer",
        "spring.kafka.consumer.value-deserializer=org.apache.kafka.common.serialization.StringDeserializer",
        "spring.kafka.producer.key-serializer=org.apache.kafka.common.serialization.StringSerializer",
        "spring.kafka.producer.value-serializer=org.apache.kafka.common.serialization.StringSerializer",
        "spring.flyway.locations=classpath:db/sumi/{vendor}",
        "sumi.kafka.busy-retry-interval=100ms",
        "sumi.outbox.dispatcher.min-poll-interval=50ms",
        "sumi.outbox.dispatcher.max-poll-interval=200ms"
    };

    static void database(DynamicPropertyRegistry registry) {
        TestDatabase.POSTGRESQL.registerDataSource(registry::add);
    }

    /** What the listeners did: mails "sent" per listener and key. A payload {@code poison} makes them throw. */
    public static final class Mailbox {
        private final Map<String, AtomicInteger> sent = new ConcurrentHashMap<>();

        void send(String listener, String key, String payload) {
            if (payload.contains("poison")) {
                throw new IllegalArgumentException("cannot send " + payload);
            }
            sent.computeIfAbsent(listener + "/" + key, k -> new AtomicInteger()).incrementAndGet();
        }

        public int sent(String listener, String key) {
            AtomicInteger count = sent.get(listener + "/" + key);
            return count == null ? 0 : count.get();
        }
    }

    @Bean
    Mailbox mailbox() {
        return new Mailbox();
    }

    @Bean
    DefaultErrorHandler errorHandler(KafkaTemplate<Object, Object> template) {
        return new DefaultErrorHandler(new DeadLetterPublishingRecoverer(template), new FixedBackOff(50, 2));
    }

    @Bean
    IdempotentMailer idempotentMailer(Mailbox mailbox) {
        return new IdempotentMailer(mailbox);
    }

    @Bean
    PlainMailer plainMailer(Mailbox mailbox) {
        return new PlainMailer(mailbox);
    }

    /** Sends one mail per key, however often the message comes: Sumi in lease mode. */
    public static class IdempotentMailer {
        private final Mailbox mailbox;

        IdempotentMailer(Mailbox mailbox) {
            this.mailbox = mailbox;
        }

        @KafkaListener(id = "kit-idempotent", topics = "kit.idempotent")
        @IdempotentHandler(mode = IdempotencyMode.LEASE, lease = "3s")
        public void onMail(String payload) {
            mailbox.send("kit-idempotent", IdempotencyContext.current().key(), payload);
        }
    }

    /** The same listener without Sumi: one mail per copy. */
    public static class PlainMailer {
        private final Mailbox mailbox;

        PlainMailer(Mailbox mailbox) {
            this.mailbox = mailbox;
        }

        @KafkaListener(id = "kit-plain", topics = "kit.plain")
        public void onMail(ConsumerRecord<String, String> record) {
            mailbox.send("kit-plain", record.key(), record.value());
        }
    }
}
