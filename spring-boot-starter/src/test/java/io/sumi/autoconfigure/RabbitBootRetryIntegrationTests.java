package io.sumi.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.sumi.consumer.IdempotencyContext;
import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentHandler;
import io.sumi.store.ClaimOutcome;
import io.sumi.store.ClaimRequest;
import io.sumi.store.MessageStatus;
import io.sumi.store.ProcessedMessage;
import io.sumi.store.ProcessedMessageStore;
import io.sumi.testing.TestDatabase;
import io.sumi.testing.TestRabbit;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.springframework.amqp.core.AmqpAdmin;
import org.springframework.amqp.core.Declarables;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.MessageProperties;
import org.springframework.amqp.rabbit.annotation.RabbitListener;
import org.springframework.amqp.rabbit.config.SimpleRabbitListenerContainerFactory;
import org.springframework.amqp.rabbit.connection.ConnectionFactory;
import org.springframework.amqp.rabbit.core.RabbitTemplate;
import org.springframework.amqp.rabbit.listener.RabbitListenerEndpointRegistry;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.amqp.autoconfigure.RabbitListenerRetrySettingsCustomizer;
import org.springframework.boot.amqp.autoconfigure.SimpleRabbitListenerContainerFactoryConfigurer;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.Lifecycle;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * Issue 19 (A7 with Boot's listener retry): {@code spring.rabbitmq.listener.simple.retry.enabled=true}
 * puts Spring AMQP's stateless retry interceptor in the container factory's advice chain, and it
 * retries by calling {@code proceed()} again on the same invocation, which starts after the last
 * advice: before the fix, the second and later attempts skipped Sumi's inner advice, so a key that
 * turned busy during the retry reached the retry interceptor, was "retried" without Sumi's busy hold
 * and dead-lettered by Boot's {@code RejectAndDontRequeueRecoverer} when the retries ran out (a
 * consumer batch was acknowledged and dropped: that recoverer cannot recover a batch).
 *
 * <p>The interleaving is forced, not raced: the key is claimed by "another instance" (a live lease,
 * {@link #FOREIGN_LEASE}) from Boot's retry policy, after the handler's first attempt failed and
 * released its claim, before the retry's next attempt. The queues are quorum queues with
 * {@code x-delivery-limit} {@value #DELIVERY_LIMIT} and a dead-letter exchange.
 */
@SpringBootTest(
        classes = RabbitBootRetryIntegrationTests.App.class,
        properties = {
            "spring.main.banner-mode=off",
            "spring.flyway.locations=classpath:db/sumi/{vendor}",
            "spring.rabbitmq.listener.simple.prefetch=1",
            "spring.rabbitmq.listener.simple.retry.enabled=true",
            "spring.rabbitmq.listener.simple.retry.max-retries=" + RabbitBootRetryIntegrationTests.MAX_RETRIES,
            "spring.rabbitmq.listener.simple.retry.initial-interval=50ms",
            "sumi.rabbit.busy-retry-interval=200ms"
        })
class RabbitBootRetryIntegrationTests {

    static final String RUN = UUID.randomUUID().toString().substring(0, 8);
    static final String PREFIX = "sumi-boot-retry-" + RUN + "-";
    static final int DELIVERY_LIMIT = 2;
    static final int MAX_RETRIES = 2;
    static final Duration FOREIGN_LEASE = Duration.ofSeconds(3);
    static final List<String> QUEUES = List.of("record", "batch", "failing", "failing-batch");

    @DynamicPropertySource
    static void services(DynamicPropertyRegistry registry) {
        TestDatabase.POSTGRESQL.registerDataSource(registry::add);
        TestRabbit.requireBroker();
        registry.add("spring.rabbitmq.host", () -> TestRabbit.HOST);
        registry.add("spring.rabbitmq.port", () -> TestRabbit.PORT);
        registry.add("it.prefix", () -> PREFIX);
    }

    @Autowired
    RabbitTemplate template;

    @Autowired
    AmqpAdmin admin;

    @Autowired
    RabbitListenerEndpointRegistry registry;

    @Autowired
    ProcessedMessageStore store;

    @Autowired
    Listeners listeners;

    @Test
    void aHandlerThatKeepsFailingIsRetriedByBootThenDeadLetteredAndNeverCompleted() {
        // Negative control: Boot's retry and the dead-letter exchange are really in place.
        String key = RUN + "-failing";
        send("failing", key);

        await().atMost(Duration.ofSeconds(30)).until(() -> peekDeadLetter("failing"));
        assertThat(listeners.attempts(key))
                .as("the first attempt and Boot's retries")
                .isEqualTo(1 + MAX_RETRIES);
        assertThat(store.find("failing", key).map(ProcessedMessage::status))
                .as("a failure is never completed")
                .isNotEqualTo(Optional.of(MessageStatus.COMPLETED));
    }

    @Test
    void aKeyThatTurnsBusyDuringBootsRetryIsHeldInPlaceThenRunsNeverDeadLettered() {
        String key = RUN + "-record";
        send("record", key);

        await().atMost(Duration.ofSeconds(40)).until(() -> listeners.done(key) == 1 || peekDeadLetter("record"));
        assertThat(deadLetter("record")).as("a busy key is never dead-lettered").isNull();
        assertThat(listeners.foreignClaims())
                .as("the key was busy during the retry")
                .contains(key);
        assertThat(listeners.attempts(key))
                .as("the failed attempt, then the run once the other instance's lease ended")
                .isEqualTo(2);
        assertThat(listeners.redelivered(key))
                .as("held by its consumer, never requeued")
                .isFalse();
        assertThat(store.find("record", key).map(ProcessedMessage::status)).contains(MessageStatus.COMPLETED);
    }

    @Test
    void aConsumerBatchWhoseKeyTurnsBusyDuringBootsRetryIsHeldAndEveryMessageRunsOnce() {
        List<String> keys = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            keys.add(RUN + "-batch-" + i);
        }
        // Lifecycle: the container interface moved packages in Spring AMQP 4.1 (Boot 4.1).
        Lifecycle container = registry.getListenerContainer("boot-retry-batch");
        // One batch: every message is in the queue before the consumer starts.
        container.stop();
        keys.forEach(key -> send("batch", key));
        container.start();

        await().atMost(Duration.ofSeconds(40))
                .until(() -> keys.stream().allMatch(key -> listeners.done(key) == 1) || peekDeadLetter("batch"));
        assertThat(deadLetter("batch")).as("none dead-lettered").isNull();
        assertThat(listeners.foreignClaims())
                .as("a key of the batch was busy during the retry")
                .contains(keys.get(1));
        for (String key : keys) {
            assertThat(listeners.done(key)).as(key + " ran to success once").isEqualTo(1);
            assertThat(listeners.redelivered(key)).as(key + " never requeued").isFalse();
            assertThat(store.find("batch", key).map(ProcessedMessage::status))
                    .as(key)
                    .contains(MessageStatus.COMPLETED);
        }
    }

    /**
     * Issue 19: a consumer batch that keeps failing under Boot's retry. Before the fix Boot's default
     * recoverer ({@code RejectAndDontRequeueRecoverer}, not a {@code MessageBatchRecoverer}) did
     * nothing with the spent batch and Spring AMQP acknowledged it: the queue was empty, the
     * dead-letter queue too, and no row completed (the messages were gone). Now the starter's
     * {@code RejectAndDontRequeueBatchRecoverer} rejects the whole batch to the dead-letter exchange.
     */
    @Test
    void aConsumerBatchThatKeepsFailingIsDeadLetteredWholeAfterBootsRetriesAndNeverCompleted() {
        List<String> keys = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            keys.add(RUN + "-failing-batch-" + i);
        }
        Lifecycle container = registry.getListenerContainer("boot-retry-failing-batch");
        // One batch: every message is in the queue before the consumer starts.
        container.stop();
        keys.forEach(key -> send("failing-batch", key));
        container.start();

        await().atMost(Duration.ofSeconds(30))
                .until(() -> keys.stream().allMatch(key -> listeners.attempts(key) == 1 + MAX_RETRIES));
        // The batch is settled after the recoverer: either to the dead-letter exchange or (the loss)
        // acknowledged; the queue is empty in both cases, so wait for the dead-letter queue.
        await().atMost(Duration.ofSeconds(15))
                .untilAsserted(() -> assertThat(messagesIn("failing-batch.dlq"))
                        .as("the spent batch reached the dead-letter exchange, every message of it")
                        .isEqualTo(keys.size()));
        assertThat(messagesIn("failing-batch")).as("nothing left in the queue").isZero();
        for (String key : keys) {
            assertThat(listeners.attempts(key))
                    .as(key + ": the first attempt and Boot's retries")
                    .isEqualTo(1 + MAX_RETRIES);
            assertThat(store.find("failing-batch", key).map(ProcessedMessage::status))
                    .as(key + ": a failure is never completed")
                    .isNotEqualTo(Optional.of(MessageStatus.COMPLETED));
        }
    }

    long messagesIn(String queue) {
        var info = admin.getQueueInfo(PREFIX + queue);
        return info == null ? -1 : info.getMessageCount();
    }

    void send(String queue, String key) {
        MessageProperties properties = new MessageProperties();
        properties.setContentType(MessageProperties.CONTENT_TYPE_TEXT_PLAIN);
        properties.setHeader("outbox-id", key);
        template.send("", PREFIX + queue, new Message(key.getBytes(StandardCharsets.UTF_8), properties));
    }

    @Nullable
    Message deadLetter(String queue) {
        return template.receive(PREFIX + queue + ".dlq");
    }

    /** Whether the dead-letter queue of {@code queue} holds a message (left there for the assertion). */
    boolean peekDeadLetter(String queue) {
        var info = admin.getQueueInfo(PREFIX + queue + ".dlq");
        return info != null && info.getMessageCount() > 0;
    }

    record Claim(String consumer, String key) {}

    /**
     * The listeners: the first attempt of each record and batch fails and asks for the key (the
     * batch's second one) to be claimed by another instance once the failure has released it.
     */
    static class Listeners {

        final Map<String, AtomicInteger> attempts = new ConcurrentHashMap<>();
        final Map<String, AtomicInteger> done = new ConcurrentHashMap<>();
        final Map<String, Boolean> redelivered = new ConcurrentHashMap<>();
        final List<String> foreignClaims = new CopyOnWriteArrayList<>();
        /** The claim another instance makes after the current failure, before Boot's next attempt. */
        final AtomicReference<@Nullable Claim> claimAfterFailure = new AtomicReference<>();

        private final ProcessedMessageStore store;

        Listeners(ProcessedMessageStore store) {
            this.store = store;
        }

        int attempts(String key) {
            AtomicInteger n = attempts.get(key);
            return n == null ? 0 : n.get();
        }

        int done(String key) {
            AtomicInteger n = done.get(key);
            return n == null ? 0 : n.get();
        }

        /** The keys another instance claimed during a retry (a method: the bean is a proxy). */
        List<String> foreignClaims() {
            return List.copyOf(foreignClaims);
        }

        boolean redelivered(String key) {
            return redelivered.getOrDefault(key, false);
        }

        private int attempt(String key, Message message) {
            Object count = message.getMessageProperties().getHeaders().get("x-delivery-count");
            if (message.getMessageProperties().isRedelivered() || (count instanceof Number n && n.longValue() > 0)) {
                redelivered.put(key, true);
            }
            return attempts.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
        }

        /** Called by Boot's retry policy after a failed attempt (its claims are released by then). */
        void afterFailure() {
            Claim claim = claimAfterFailure.getAndSet(null);
            if (claim != null) {
                // Another instance takes the released key: a live lease this instance must wait for.
                assertThat(store.claim(claim.consumer(), new ClaimRequest(claim.key(), null), FOREIGN_LEASE)
                                .outcome())
                        .isEqualTo(ClaimOutcome.CLAIMED);
                foreignClaims.add(claim.key());
            }
        }

        @RabbitListener(id = "boot-retry-record", queues = "${it.prefix}record")
        @IdempotentHandler(consumer = "record", mode = IdempotencyMode.LEASE)
        public void record(Message message) {
            String key = IdempotencyContext.current().key();
            if (attempt(key, message) == 1) {
                claimAfterFailure.set(new Claim("record", key));
                throw new IllegalStateException("the provider timed out (first attempt)");
            }
            done.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
        }

        @RabbitListener(id = "boot-retry-batch", queues = "${it.prefix}batch", containerFactory = "batchFactory")
        @IdempotentHandler(consumer = "batch", mode = IdempotencyMode.LEASE)
        public void batch(List<Message> messages) {
            boolean first = false;
            for (Message message : messages) {
                String key =
                        (String) message.getMessageProperties().getHeaders().get("outbox-id");
                first |= attempt(key, message) == 1 && key.endsWith("-0");
            }
            if (first) {
                String busy = (String)
                        messages.get(1).getMessageProperties().getHeaders().get("outbox-id");
                claimAfterFailure.set(new Claim("batch", busy));
                throw new IllegalStateException("the provider timed out (first attempt of the batch)");
            }
            for (Message message : messages) {
                String key =
                        (String) message.getMessageProperties().getHeaders().get("outbox-id");
                done.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
            }
        }

        @RabbitListener(
                id = "boot-retry-failing-batch",
                queues = "${it.prefix}failing-batch",
                containerFactory = "batchFactory")
        @IdempotentHandler(consumer = "failing-batch", mode = IdempotencyMode.LEASE)
        public void failingBatch(List<Message> messages) {
            for (Message message : messages) {
                attempt((String) message.getMessageProperties().getHeaders().get("outbox-id"), message);
            }
            throw new IllegalStateException("the provider is down (the whole batch)");
        }

        @RabbitListener(id = "boot-retry-failing", queues = "${it.prefix}failing")
        @IdempotentHandler(consumer = "failing", mode = IdempotencyMode.LEASE)
        public void failing(Message message) {
            attempt(IdempotencyContext.current().key(), message);
            throw new IllegalStateException("the provider is down");
        }
    }

    @SpringBootConfiguration(proxyBeanMethods = false)
    @EnableAutoConfiguration(
            excludeName = {
                "org.springframework.boot.kafka.autoconfigure.KafkaAutoConfiguration",
                "org.springframework.boot.kafka.autoconfigure.metrics.KafkaMetricsAutoConfiguration",
                "org.springframework.boot.artemis.autoconfigure.ArtemisAutoConfiguration",
                "org.springframework.boot.jms.autoconfigure.JmsAutoConfiguration",
                "org.springframework.boot.jms.autoconfigure.health.JmsHealthContributorAutoConfiguration"
            })
    static class App {

        @Bean
        Listeners listeners(ProcessedMessageStore store) {
            return new Listeners(store);
        }

        /** The test's hook into Boot's retry: after each failed attempt, before the next one. */
        @Bean
        RabbitListenerRetrySettingsCustomizer afterFailureHook(ObjectProvider<Listeners> listeners) {
            return settings -> settings.setExceptionPredicate(failure -> {
                listeners.getObject().afterFailure();
                return true;
            });
        }

        /** Deletes this run's queues and rows when the context closes (quorum queues are durable). */
        @Bean
        DisposableBean cleaner(AmqpAdmin admin, JdbcTemplate jdbc) {
            return () -> {
                for (String queue : QUEUES) {
                    admin.deleteQueue(PREFIX + queue);
                    admin.deleteQueue(PREFIX + queue + ".dlq");
                }
                admin.deleteExchange(PREFIX + "dlx");
                jdbc.update("DELETE FROM processed_messages WHERE message_id LIKE ?", RUN + "-%");
            };
        }

        @Bean
        Declarables queues() {
            return TestRabbit.quorumQueuesWithDeadLetters(PREFIX, QUEUES, DELIVERY_LIMIT);
        }

        /** A consumer-batch factory with Boot's settings, its retry included. */
        @Bean
        SimpleRabbitListenerContainerFactory batchFactory(
                SimpleRabbitListenerContainerFactoryConfigurer configurer, ConnectionFactory connections) {
            SimpleRabbitListenerContainerFactory factory = new SimpleRabbitListenerContainerFactory();
            configurer.configure(factory, connections);
            factory.setBatchListener(true);
            factory.setConsumerBatchEnabled(true);
            factory.setBatchSize(3);
            factory.setPrefetchCount(10);
            factory.setReceiveTimeout(500L);
            return factory;
        }
    }
}
