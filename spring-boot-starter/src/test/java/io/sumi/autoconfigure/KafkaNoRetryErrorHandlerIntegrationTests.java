package io.sumi.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.Counter;
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
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.kafka.autoconfigure.ConcurrentKafkaListenerContainerFactoryConfigurer;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.config.ConcurrentKafkaListenerContainerFactory;
import org.springframework.kafka.core.ConsumerFactory;
import org.springframework.kafka.core.KafkaAdmin;
import org.springframework.kafka.listener.ContainerProperties;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.kafka.listener.KafkaMessageListenerContainer;
import org.springframework.kafka.listener.MessageListener;
import org.springframework.util.backoff.FixedBackOff;

/**
 * Issue 19, A4: an error handler that allows no retries ({@code new DefaultErrorHandler(new
 * FixedBackOff(0, 0))}) on a container whose listener is not itself annotated, so Sumi cannot tell
 * from the listener bean that it reaches an {@link IdempotentHandler}: a {@code @KafkaListener}
 * calling an annotated service, and a hand-built container bean whose listener is a lambda. A key
 * whose claim a killed instance holds must wait, never be skipped; before the fix the handler gave
 * the {@code MessageBusyException} to its recoverer at once ("Backoff none exhausted").
 */
@SpringBootTest(
        classes = KafkaNoRetryErrorHandlerIntegrationTests.App.class,
        properties = {
            "spring.kafka.consumer.auto-offset-reset=earliest",
            "spring.kafka.listener.concurrency=1",
            "spring.flyway.locations=classpath:db/sumi/{vendor}",
            "sumi.kafka.busy-retry-interval=50ms",
            "sumi.consumer.lease=30s"
        })
class KafkaNoRetryErrorHandlerIntegrationTests extends KafkaStarterTestBase {

    /** More busy attempts than one: a handler without retries would have skipped the record at the first. */
    static final int BUSY_ATTEMPTS = 5;

    @Autowired
    Service service;

    @Autowired
    MeterRegistry meters;

    static ProducerRecord<String, String> record(String topic, String key) {
        ProducerRecord<String, String> record = new ProducerRecord<>(topic, key, "payload of " + key);
        record.headers().add("outbox-id", key.getBytes(StandardCharsets.UTF_8));
        return record;
    }

    ClaimResult claimAsKilledInstance(String consumer, String key) {
        ClaimResult claim = store.claim(consumer, new ClaimRequest(key, null), Duration.ofMinutes(5));
        assertThat(claim.outcome()).isEqualTo(ClaimOutcome.CLAIMED);
        return claim;
    }

    double busy(String consumer) {
        Counter counter = meters.find("sumi.messages")
                .tag("consumer", consumer)
                .tag("outcome", "busy")
                .counter();
        return counter == null ? 0 : counter.count();
    }

    void assertBusyKeyWaitsAndThenRunsOnce(String consumer, String topic, String key) throws Exception {
        ClaimResult dead = claimAsKilledInstance(consumer, key);
        template.send(record(topic, key)).get(10, TimeUnit.SECONDS);

        await().atMost(Duration.ofSeconds(20)).until(() -> busy(consumer) >= BUSY_ATTEMPTS);
        assertThat(service.count(consumer, key))
                .as("not run while the dead claim holds it")
                .isZero();
        assertThat(store.release(dead.message(), "instance A was killed")).isTrue();
        await().atMost(Duration.ofSeconds(20)).until(() -> service.count(consumer, key) == 1);
        await().atMost(Duration.ofSeconds(10))
                .untilAsserted(() -> assertThat(store.find(consumer, key))
                        .get()
                        .extracting(row -> row.status())
                        .isEqualTo(MessageStatus.COMPLETED));
        assertThat(service.count(consumer, key)).as("run exactly once").isEqualTo(1);
    }

    @Test
    void aBusyKeyOfAnAnnotatedServiceIsNotSkippedByAnErrorHandlerWithoutRetries() throws Exception {
        assertBusyKeyWaitsAndThenRunsOnce("noretry-service", "noretry.service", "s1");
    }

    @Test
    void aBusyKeyOfAHandBuiltLambdaContainerIsNotSkippedByAnErrorHandlerWithoutRetries() throws Exception {
        assertBusyKeyWaitsAndThenRunsOnce("noretry-lambda", "noretry.lambda", "l1");
    }

    /** The annotated service the listeners call. */
    static class Service {
        final Map<String, AtomicInteger> counts = new ConcurrentHashMap<>();

        @IdempotentHandler(consumer = "noretry-service", mode = IdempotencyMode.LEASE)
        public void handle(ConsumerRecord<String, String> record) {
            effect("noretry-service");
        }

        @IdempotentHandler(consumer = "noretry-lambda", mode = IdempotencyMode.LEASE)
        public void handleFromLambda(ConsumerRecord<String, String> record) {
            effect("noretry-lambda");
        }

        private void effect(String consumer) {
            counts.computeIfAbsent(consumer + "/" + IdempotencyContext.current().key(), k -> new AtomicInteger())
                    .incrementAndGet();
        }

        int count(String consumer, String key) {
            AtomicInteger count = counts.get(consumer + "/" + key);
            return count == null ? 0 : count.get();
        }
    }

    static class Listener {
        private final Service service;

        Listener(Service service) {
            this.service = service;
        }

        /** Not annotated itself: the annotated method is the service's. */
        @KafkaListener(id = "noretry-service", topics = "noretry.service", containerFactory = "noRetryFactory")
        public void on(ConsumerRecord<String, String> record) {
            service.handle(record);
        }
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class App {

        @Bean
        MeterRegistry meterRegistry() {
            return new SimpleMeterRegistry();
        }

        @Bean
        Service service(JdbcTemplate jdbc) {
            jdbc.update("DELETE FROM processed_messages WHERE consumer IN ('noretry-service', 'noretry-lambda')");
            return new Service();
        }

        @Bean
        Listener listener(Service service) {
            return new Listener(service);
        }

        /** Created before the containers subscribe, as the tests send to them at once. */
        @Bean
        KafkaAdmin.NewTopics topics() {
            return new KafkaAdmin.NewTopics(
                    new NewTopic("noretry.service", 1, (short) 1), new NewTopic("noretry.lambda", 1, (short) 1));
        }

        /** docs/kafka.md step 4's "no retries" handler, written the way Spring Kafka's docs write it. */
        @Bean
        ConcurrentKafkaListenerContainerFactory<Object, Object> noRetryFactory(
                ConcurrentKafkaListenerContainerFactoryConfigurer configurer,
                ConsumerFactory<Object, Object> consumerFactory) {
            ConcurrentKafkaListenerContainerFactory<Object, Object> factory =
                    new ConcurrentKafkaListenerContainerFactory<>();
            configurer.configure(factory, consumerFactory);
            factory.setCommonErrorHandler(new DefaultErrorHandler(new FixedBackOff(0, 0)));
            return factory;
        }

        /** A container built by hand, its listener a lambda that calls the annotated service. */
        @Bean
        @SuppressWarnings("unchecked")
        KafkaMessageListenerContainer<Object, Object> lambdaContainer(
                ConsumerFactory<Object, Object> consumerFactory, Service service) {
            ContainerProperties properties = new ContainerProperties("noretry.lambda");
            properties.setGroupId("noretry-lambda");
            properties.setMessageListener((MessageListener<String, String>) service::handleFromLambda);
            KafkaMessageListenerContainer<Object, Object> container =
                    new KafkaMessageListenerContainer<>(consumerFactory, properties);
            container.setCommonErrorHandler(new DefaultErrorHandler(new FixedBackOff(0, 0)));
            return container;
        }
    }
}
