package io.sumi.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.sumi.consumer.IdempotencyContext;
import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentHandler;
import io.sumi.store.MessageStatus;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.BackOff;
import org.springframework.kafka.annotation.DltHandler;
import org.springframework.kafka.annotation.EnableKafkaRetryTopic;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.annotation.RetryableTopic;

/**
 * Issue 19, A2: a {@code @KafkaListener} returning a {@code CompletableFuture} is done when its future completes, not when the method returns. Each listener's first future
 * fails, later and on another thread, after the method has returned; the second succeeds. Before
 * the fix the row was COMPLETED when the method returned, so the retry was a duplicate and the
 * work never ran.
 */
@SpringBootTest(
        classes = KafkaAsyncListenerIntegrationTests.App.class,
        properties = {
            "spring.kafka.consumer.auto-offset-reset=earliest",
            "spring.kafka.listener.concurrency=1",
            "spring.flyway.locations=classpath:db/sumi/{vendor}",
            "sumi.kafka.busy-retry-interval=50ms",
            "sumi.consumer.lease=30s",
            "sumi.kafka.allow-async-listeners=true"
        })
class KafkaAsyncListenerIntegrationTests extends KafkaStarterTestBase {

    @Autowired
    Effects effects;

    @Test
    void aFailedCompletableFutureUnderRetryableTopicIsRunAgainAndCompletedWhenItSucceeds() throws Exception {
        template.send(record("async.future", "f1")).get(10, TimeUnit.SECONDS);

        await().atMost(Duration.ofSeconds(30)).until(() -> effects.done("async-future", "f1") == 1);
        await().atMost(Duration.ofSeconds(10))
                .untilAsserted(() -> assertThat(store.find("async-future", "f1"))
                        .get()
                        .extracting(row -> row.status())
                        .isEqualTo(MessageStatus.COMPLETED));
        assertThat(effects.attempts("async-future", "f1"))
                .as("the failed future released the claim: the retry ran")
                .isEqualTo(2);
        assertThat(effects.dlt).isEmpty();
        // The key is visible in the method's synchronous part.
        assertThat(effects.contextKeys).contains("f1");
    }

    /**
     * While the future has not completed, the row stays IN_PROGRESS (its lease renewed), and the
     * record is not acknowledged: the row is completed only once the future succeeds.
     */
    @Test
    void theRowStaysInProgressUntilThePendingFutureCompletes() throws Exception {
        template.send(record("async.pending", "p1")).get(10, TimeUnit.SECONDS);

        await().atMost(Duration.ofSeconds(30)).until(() -> effects.attempts("async-pending", "p1") == 1);
        assertThat(store.find("async-pending", "p1"))
                .get()
                .extracting(row -> row.status())
                .isEqualTo(MessageStatus.IN_PROGRESS);
        effects.release.countDown();
        await().atMost(Duration.ofSeconds(10))
                .untilAsserted(() -> assertThat(store.find("async-pending", "p1"))
                        .get()
                        .extracting(row -> row.status())
                        .isEqualTo(MessageStatus.COMPLETED));
        assertThat(effects.done("async-pending", "p1")).isEqualTo(1);
    }

    /** What the listeners did, and the key each saw in its synchronous part. */
    static class Effects extends ListenerEffects {
        final List<String> contextKeys = Collections.synchronizedList(new ArrayList<>());
        final CountDownLatch release = new CountDownLatch(1);
        final ExecutorService later = Executors.newSingleThreadExecutor();

        @Override
        int attempt(String consumer, String key) {
            contextKeys.add(IdempotencyContext.current().key());
            return super.attempt(consumer, key);
        }

        /** Completes on another thread, after the listener method has returned: fails on the first attempt. */
        CompletableFuture<Void> work(String consumer, String key, int attempt) {
            return CompletableFuture.runAsync(
                    () -> {
                        if (attempt == 1) {
                            throw new IllegalStateException("the provider timed out (attempt 1)");
                        }
                        did(consumer, key);
                    },
                    later);
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

        @Bean
        Listeners listeners(Effects effects, JdbcTemplate jdbc) {
            jdbc.update("DELETE FROM processed_messages WHERE consumer IN ('async-future', 'async-pending')");
            return new Listeners(effects);
        }
    }

    static class Listeners {

        private final Effects effects;

        Listeners(Effects effects) {
            this.effects = effects;
        }

        @KafkaListener(id = "async-future", topics = "async.future")
        @RetryableTopic(attempts = "3", backOff = @BackOff(delay = 50))
        @IdempotentHandler(consumer = "async-future", mode = IdempotencyMode.LEASE)
        public CompletableFuture<Void> onFuture(ConsumerRecord<String, String> record) {
            return effects.work("async-future", record.key(), effects.attempt("async-future", record.key()));
        }

        @DltHandler
        public void onDlt(ConsumerRecord<String, String> record) {
            effects.dlt.add(record.key());
        }

        // Retry topics: Sumi refuses an asynchronous guarded listener without them (a failed future
        // would never be retried, AsyncListenerCheck).
        @KafkaListener(id = "async-pending", topics = "async.pending")
        @RetryableTopic(attempts = "3", backOff = @BackOff(delay = 50))
        @IdempotentHandler(consumer = "async-pending", mode = IdempotencyMode.LEASE)
        public CompletableFuture<Void> onPending(ConsumerRecord<String, String> record) {
            effects.attempt("async-pending", record.key());
            return CompletableFuture.runAsync(
                    () -> {
                        try {
                            effects.release.await();
                        } catch (InterruptedException ex) {
                            Thread.currentThread().interrupt();
                            throw new IllegalStateException(ex);
                        }
                        effects.did("async-pending", record.key());
                    },
                    Executors.newSingleThreadExecutor());
        }
    }
}
