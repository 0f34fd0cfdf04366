package io.sumi.rabbit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.sumi.consumer.IdempotencyContext;
import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentHandler;
import io.sumi.store.MessageStatus;
import io.sumi.store.ProcessedMessageStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.amqp.core.AcknowledgeMode;
import org.springframework.amqp.core.Declarables;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.QueueBuilder;
import org.springframework.amqp.rabbit.annotation.EnableRabbit;
import org.springframework.amqp.rabbit.annotation.RabbitListener;
import org.springframework.amqp.rabbit.config.SimpleRabbitListenerContainerFactory;
import org.springframework.amqp.rabbit.connection.ConnectionFactory;
import org.springframework.amqp.rabbit.core.RabbitAdmin;
import org.springframework.amqp.rabbit.core.RabbitTemplate;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;

/**
 * Issue 19, A2: a {@code @RabbitListener} returning a {@code CompletableFuture} is done when the
 * future completes. Spring AMQP acks such a delivery when the future succeeds and requeues it when
 * it fails; the ledger row must follow: released on the failure (so the redelivery runs), completed
 * on the success. Before the fix the row was COMPLETED when the method returned, and the
 * redelivery after the failed future was a duplicate: the work never ran.
 */
class RabbitAsyncListenerIntegrationTests {

    static final String RUN = UUID.randomUUID().toString().substring(0, 8);
    static final String PREFIX = "sumi-rabbit-async-it-" + RUN + "-";
    static final List<String> QUEUES = List.of("retry", "pending");

    static AnnotationConfigApplicationContext context;
    static RabbitTemplate sender;
    static Effects effects;
    static ProcessedMessageStore store;

    @BeforeAll
    static void start() {
        context = RabbitBinderTestWiring.context(PREFIX, Config.class);
        context.refresh();
        sender = new RabbitTemplate(context.getBean(ConnectionFactory.class));
        effects = context.getBean(Effects.class);
        store = context.getBean(ProcessedMessageStore.class);
    }

    @AfterAll
    static void cleanUp() {
        RabbitBinderTestWiring.cleanUp(
                context, RUN, QUEUES.stream().map(queue -> PREFIX + queue).toList(), List.of());
    }

    static void send(String queue, String key) {
        sender.convertAndSend("", PREFIX + queue, "payload of " + key, message -> {
            message.getMessageProperties().setHeader("outbox-id", key);
            return message;
        });
    }

    MessageStatus status(String consumer, String key) {
        return store.find(consumer, key).orElseThrow().status();
    }

    @Test
    void aFailedFutureIsRedeliveredRunAgainAndCompletedWhenItSucceeds() {
        String key = RUN + "-1";
        send("retry", key);

        await().atMost(Duration.ofSeconds(20)).until(() -> effects.done(key) == 1);
        await().atMost(Duration.ofSeconds(10))
                .untilAsserted(() -> assertThat(status("async-retry", key)).isEqualTo(MessageStatus.COMPLETED));
        assertThat(effects.attempts(key))
                .as("the failed future released the claim: the redelivery ran")
                .isEqualTo(2);
        assertThat(effects.contextKeys).contains(key);
        // Acked once the second future succeeded: nothing is left in the queue.
        await().atMost(Duration.ofSeconds(10))
                .until(() -> context.getBean(RabbitAdmin.class)
                                .getQueueInfo(PREFIX + "retry")
                                .getMessageCount()
                        == 0);
    }

    @Test
    void theRowStaysInProgressUntilThePendingFutureCompletes() {
        String key = RUN + "-2";
        send("pending", key);

        await().atMost(Duration.ofSeconds(20)).until(() -> effects.attempts(key) == 1);
        assertThat(status("async-pending", key)).isEqualTo(MessageStatus.IN_PROGRESS);
        effects.release.countDown();
        await().atMost(Duration.ofSeconds(10))
                .untilAsserted(() -> assertThat(status("async-pending", key)).isEqualTo(MessageStatus.COMPLETED));
        assertThat(effects.done(key)).isEqualTo(1);
    }

    static class Effects {
        final Map<String, AtomicInteger> attempts = new ConcurrentHashMap<>();
        final Map<String, AtomicInteger> done = new ConcurrentHashMap<>();
        final List<String> contextKeys = Collections.synchronizedList(new ArrayList<>());
        final CountDownLatch release = new CountDownLatch(1);
        final ExecutorService later = Executors.newCachedThreadPool();

        int attempt(String key) {
            contextKeys.add(IdempotencyContext.current().key());
            return attempts.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
        }

        int attempts(String key) {
            AtomicInteger count = attempts.get(key);
            return count == null ? 0 : count.get();
        }

        void did(String key) {
            done.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
        }

        int done(String key) {
            AtomicInteger count = done.get(key);
            return count == null ? 0 : count.get();
        }
    }

    static class Listeners {

        private final Effects effects;

        Listeners(Effects effects) {
            this.effects = effects;
        }

        /** The first future fails on another thread after the method returned; the second succeeds. */
        @RabbitListener(id = "async-retry", queues = "${it.prefix}retry")
        @IdempotentHandler(mode = IdempotencyMode.LEASE)
        public CompletableFuture<Void> retry(Message message) {
            String key = message.getMessageProperties().getHeader("outbox-id");
            int attempt = effects.attempt(key);
            return CompletableFuture.runAsync(
                    () -> {
                        if (attempt == 1) {
                            throw new IllegalStateException("the provider timed out (attempt 1)");
                        }
                        effects.did(key);
                    },
                    effects.later);
        }

        @RabbitListener(id = "async-pending", queues = "${it.prefix}pending")
        @IdempotentHandler(mode = IdempotencyMode.LEASE)
        public CompletableFuture<Void> pending(Message message) {
            String key = message.getMessageProperties().getHeader("outbox-id");
            effects.attempt(key);
            return CompletableFuture.runAsync(
                    () -> {
                        try {
                            effects.release.await();
                        } catch (InterruptedException ex) {
                            Thread.currentThread().interrupt();
                            throw new IllegalStateException(ex);
                        }
                        effects.did(key);
                    },
                    effects.later);
        }
    }

    @Configuration(proxyBeanMethods = false)
    @EnableRabbit
    @Import({SumiRabbitTestBeans.class, RabbitBinderTestWiring.Broker.class})
    static class Config {

        @Bean
        Declarables queues() {
            List<org.springframework.amqp.core.Declarable> declarables = new ArrayList<>();
            for (String name : QUEUES) {
                declarables.add(QueueBuilder.nonDurable(PREFIX + name).build());
            }
            return new Declarables(declarables);
        }

        /** AUTO, as users write it: Spring AMQP switches a container with async listeners to MANUAL. */
        @Bean
        SimpleRabbitListenerContainerFactory rabbitListenerContainerFactory(ConnectionFactory connectionFactory) {
            SimpleRabbitListenerContainerFactory factory = new SimpleRabbitListenerContainerFactory();
            factory.setConnectionFactory(connectionFactory);
            factory.setAcknowledgeMode(AcknowledgeMode.AUTO);
            return factory;
        }

        @Bean
        Effects effects() {
            return new Effects();
        }

        @Bean
        Listeners listeners(Effects effects) {
            return new Listeners(effects);
        }
    }
}
