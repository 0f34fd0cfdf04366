package io.sumi.test;

import io.sumi.consumer.IdempotencyContext;
import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentHandler;
import io.sumi.outbox.Outbox;
import io.sumi.testing.TestDatabase;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.listener.DeadLetterPublishingRecoverer;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.util.backoff.FixedBackOff;

/**
 * The application the kit's Kafka tests run against: the same mail listener twice, once guarded
 * by Sumi ({@code kit-idempotent}) and once without ({@code kit-plain}, the negative control), an
 * error handler that retries twice and dead-letters to {@code <topic>-dlt}, and the local
 * PostgreSQL. Its properties are the test resources' {@code application.properties}, so that
 * every test class on it (with the same {@code @EmbeddedKafka}) shares one context.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
public class KitTestApplication {

    /**
     * The local PostgreSQL (shared, migrated pool of the test support); not closed with the
     * context, other contexts of the JVM use it too.
     */
    @Bean(destroyMethod = "")
    DataSource dataSource() {
        return TestDatabase.POSTGRESQL.dataSource();
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

    @Bean
    Shop shop(Outbox outbox) {
        return new Shop(outbox);
    }

    /** The application's service for the outbox contracts: appends a mail to the outbox in its business transaction. */
    public static class Shop {
        private final Outbox outbox;

        Shop(Outbox outbox) {
            this.outbox = outbox;
        }

        @Transactional
        public void placeOrder() {
            outbox.append(OutboxContractIntegrationTests.message("kit.idempotent"));
        }
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
