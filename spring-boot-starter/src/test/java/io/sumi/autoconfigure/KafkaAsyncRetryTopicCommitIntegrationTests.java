package io.sumi.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentHandler;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.kafka.autoconfigure.ConcurrentKafkaListenerContainerFactoryConfigurer;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Primary;
import org.springframework.kafka.annotation.BackOff;
import org.springframework.kafka.annotation.EnableKafkaRetryTopic;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.annotation.RetryableTopic;
import org.springframework.kafka.config.ConcurrentKafkaListenerContainerFactory;
import org.springframework.kafka.core.ConsumerFactory;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.core.ProducerFactory;
import org.springframework.kafka.listener.ContainerProperties.AckMode;
import org.springframework.kafka.support.SendResult;

/**
 * Issue 19, A2 (investigation): when does Spring Kafka 4.0 commit the offset of a record whose
 * {@code @IdempotentHandler} {@code CompletableFuture} failed under {@code @RetryableTopic}? An
 * asynchronous listener's container always runs in a manual ack mode (Spring Kafka turns BATCH,
 * RECORD and the others into MANUAL; MANUAL_IMMEDIATE stays), so the two manual modes are all
 * there is. The retry topic's publish is held (a template that waits on a latch) and the group's
 * committed offset read while it waits.
 *
 * <p>What Spring Kafka's source says, and this test shows on a real broker: the adapter
 * acknowledges the failed record before it hands it to the container's async-failure callback
 * ({@code MessagingMessageListenerAdapter.asyncFailure}), and the container commits the pending
 * acknowledgements before it runs the error handler that publishes the retry
 * ({@code invokeErrorHandlerBySingleRecord}: {@code processCommits()}, then
 * {@code handleRemaining}). So the offset is committed while the retry is not yet published: a
 * JVM that dies in that window, or a rebalance after a failed retry publish (whose seek back only
 * holds while this consumer keeps the partition), loses the message. Sumi cannot close that
 * window from the listener; docs/consumer-semantics.md ("Asynchronous handlers") says so.
 */
@SpringBootTest(
        classes = KafkaAsyncRetryTopicCommitIntegrationTests.App.class,
        properties = {
            "spring.kafka.consumer.auto-offset-reset=earliest",
            "spring.kafka.listener.concurrency=1",
            "spring.flyway.locations=classpath:db/sumi/{vendor}",
            "sumi.kafka.busy-retry-interval=50ms",
            "sumi.consumer.lease=30s",
            // The loss window this class pins is why the opt-in exists (AsyncListenerCheck).
            "sumi.kafka.allow-async-listeners=true"
        })
class KafkaAsyncRetryTopicCommitIntegrationTests extends KafkaStarterTestBase {

    @Autowired
    Effects effects;

    @Autowired
    HeldRetryTemplate held;

    @Value("${spring.kafka.bootstrap-servers}")
    String bootstrapServers;

    @ParameterizedTest
    @ValueSource(strings = {"MANUAL", "MANUAL_IMMEDIATE"})
    void theFailedRecordsOffsetIsCommittedBeforeItsRetryIsPublished(String ackMode) throws Exception {
        String topic = "async.commit." + ackMode.toLowerCase();
        String group = "async-commit-" + ackMode.toLowerCase();
        ProducerRecord<String, String> record = new ProducerRecord<>(topic, "c1", "payload of c1");
        // A key of this run: the ledger outlives the run, and a key completed by an earlier one is a duplicate.
        String key = "c1-" + ackMode + "-" + UUID.randomUUID();
        record.headers().add("outbox-id", key.getBytes(StandardCharsets.UTF_8));
        template.send(record).get(10, TimeUnit.SECONDS);

        CountDownLatch publishing = held.publishing(topic);
        assertThat(publishing.await(30, TimeUnit.SECONDS))
                .as("the failed future's record is being published to the retry topic")
                .isTrue();
        try {
            // The publish waits on the latch: the retry topic does not have the record yet.
            assertThat(committedOffset(group, new TopicPartition(topic, 0)))
                    .as("the group's committed offset of %s-0 while the retry publish is held", topic)
                    .isEqualTo(1L);
        } finally {
            held.release(topic);
        }
        // Released: the retry is published and runs (Sumi released the row when the future failed).
        await().atMost(Duration.ofSeconds(30)).until(() -> effects.done(group) == 1);
        assertThat(effects.attempts(group)).isEqualTo(2);
    }

    private long committedOffset(String group, TopicPartition partition) throws Exception {
        Properties properties = new Properties();
        properties.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
        try (Admin admin = Admin.create(properties)) {
            Map<TopicPartition, OffsetAndMetadata> offsets = admin.listConsumerGroupOffsets(group)
                    .partitionsToOffsetAndMetadata()
                    .get(10, TimeUnit.SECONDS);
            OffsetAndMetadata committed = offsets.get(partition);
            return committed == null ? -1 : committed.offset();
        }
    }

    /** What the listeners did, per consumer group. */
    static class Effects {
        final Map<String, AtomicInteger> attempts = new ConcurrentHashMap<>();
        final Map<String, AtomicInteger> done = new ConcurrentHashMap<>();
        final ExecutorService worker = Executors.newSingleThreadExecutor();

        int attempts(String group) {
            AtomicInteger count = attempts.get(group);
            return count == null ? 0 : count.get();
        }

        int done(String group) {
            AtomicInteger count = done.get(group);
            return count == null ? 0 : count.get();
        }

        /** Work on another thread: the first attempt fails after the method returned, the second succeeds. */
        CompletableFuture<Void> work(String group) {
            int attempt =
                    attempts.computeIfAbsent(group, k -> new AtomicInteger()).incrementAndGet();
            return CompletableFuture.runAsync(
                    () -> {
                        if (attempt == 1) {
                            throw new IllegalStateException("the provider timed out");
                        }
                        done.computeIfAbsent(group, k -> new AtomicInteger()).incrementAndGet();
                    },
                    worker);
        }
    }

    /** The retry topics' template: each topic's first retry publish waits until the test releases it. */
    static class HeldRetryTemplate extends KafkaTemplate<Object, Object> {
        private final Map<String, CountDownLatch> publishing = new ConcurrentHashMap<>();
        private final Map<String, CountDownLatch> released = new ConcurrentHashMap<>();

        HeldRetryTemplate(ProducerFactory<Object, Object> producers) {
            super(producers);
        }

        CountDownLatch publishing(String topic) {
            return publishing.computeIfAbsent(topic, t -> new CountDownLatch(1));
        }

        void release(String topic) {
            released.computeIfAbsent(topic, t -> new CountDownLatch(1)).countDown();
        }

        @Override
        public CompletableFuture<SendResult<Object, Object>> send(ProducerRecord<Object, Object> record) {
            String main = record.topic().replaceFirst("-retry.*$", "");
            if (!main.equals(record.topic())) {
                publishing(main).countDown();
                try {
                    released.computeIfAbsent(main, t -> new CountDownLatch(1)).await(60, TimeUnit.SECONDS);
                } catch (InterruptedException ex) {
                    Thread.currentThread().interrupt();
                }
            }
            return super.send(record);
        }
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @EnableKafkaRetryTopic
    static class App {

        @Bean
        Effects effects() {
            return new Effects();
        }

        /** Boot's template backs off for the retry topics' one: the tests send with this. */
        @Bean
        @Primary
        KafkaTemplate<?, ?> kafkaTemplate(ProducerFactory<Object, Object> producers) {
            return new KafkaTemplate<>(producers);
        }

        @Bean
        HeldRetryTemplate heldRetryTemplate(ProducerFactory<Object, Object> producers) {
            return new HeldRetryTemplate(producers);
        }

        @Bean
        ConcurrentKafkaListenerContainerFactory<Object, Object> manualImmediateFactory(
                ConcurrentKafkaListenerContainerFactoryConfigurer configurer,
                ConsumerFactory<Object, Object> consumers) {
            ConcurrentKafkaListenerContainerFactory<Object, Object> factory =
                    new ConcurrentKafkaListenerContainerFactory<>();
            configurer.configure(factory, consumers);
            factory.getContainerProperties().setAckMode(AckMode.MANUAL_IMMEDIATE);
            return factory;
        }

        @Bean
        Listeners listeners(Effects effects) {
            return new Listeners(effects);
        }
    }

    static class Listeners {
        private final Effects effects;

        Listeners(Effects effects) {
            this.effects = effects;
        }

        /** Boot's factory (AckMode BATCH, which Spring Kafka turns into MANUAL for an async listener). */
        @RetryableTopic(attempts = "2", backOff = @BackOff(delay = 100), kafkaTemplate = "heldRetryTemplate")
        @KafkaListener(id = "async-commit-manual", topics = "async.commit.manual")
        @IdempotentHandler(consumer = "async-commit-manual", mode = IdempotencyMode.LEASE)
        public CompletableFuture<Void> manual(ConsumerRecord<String, String> record) {
            return effects.work("async-commit-manual");
        }

        @RetryableTopic(attempts = "2", backOff = @BackOff(delay = 100), kafkaTemplate = "heldRetryTemplate")
        @KafkaListener(
                id = "async-commit-manual_immediate",
                topics = "async.commit.manual_immediate",
                containerFactory = "manualImmediateFactory")
        @IdempotentHandler(consumer = "async-commit-manual_immediate", mode = IdempotencyMode.LEASE)
        public CompletableFuture<Void> manualImmediate(ConsumerRecord<String, String> record) {
            return effects.work("async-commit-manual_immediate");
        }
    }
}
