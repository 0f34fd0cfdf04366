package io.sumi.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;
import static org.awaitility.Awaitility.await;

import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentHandler;
import io.sumi.store.MessageStatus;
import io.sumi.store.ProcessedMessage;
import io.sumi.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.BackOff;
import org.springframework.kafka.annotation.DltHandler;
import org.springframework.kafka.annotation.EnableKafkaRetryTopic;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.annotation.RetryableTopic;
import org.springframework.kafka.core.KafkaAdmin;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.listener.DeadLetterPublishingRecoverer;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.util.backoff.FixedBackOff;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * Issue 19, A2 for {@code Mono}: a {@code @KafkaListener} returning a {@code Mono} is done when the
 * {@code Mono} completes, not when the method returns. Each {@code Mono} does its work on another
 * thread after the method has returned, only once subscribed to.
 *
 * <p>Under {@code @RetryableTopic} a failed {@code Mono} leaves the row not completed, so the record
 * is retried and runs again (not a duplicate), and the row completes when a later {@code Mono}
 * succeeds; one that always fails reaches the dead-letter topic with its row never completed.
 *
 * <p>Under docs/kafka.md step 4's {@code DefaultErrorHandler} Spring Kafka never retries a failed
 * {@code Mono} (nor a {@code CompletableFuture}), even without Sumi: the control listener shows the
 * record logged and skipped, not retried, not dead-lettered. So Sumi refuses such a guarded listener
 * at start-up ({@code AsyncListenerCheck}). It refuses one under {@code @RetryableTopic} too unless
 * {@code sumi.kafka.allow-async-listeners=true} (set here): Spring Kafka commits a failed
 * {@code Mono}'s offset before its retry is published.
 */
@SpringBootTest(
        classes = KafkaMonoListenerIntegrationTests.App.class,
        properties = {
            "spring.kafka.consumer.auto-offset-reset=earliest",
            "spring.kafka.listener.concurrency=1",
            "spring.flyway.locations=classpath:db/sumi/{vendor}",
            "sumi.kafka.busy-retry-interval=50ms",
            "sumi.consumer.lease=30s",
            "sumi.kafka.allow-async-listeners=true"
        })
class KafkaMonoListenerIntegrationTests extends KafkaStarterTestBase {

    /** {@code @RetryableTopic(attempts = "3")}: the first attempt and two retries. */
    static final int ATTEMPTS = 3;

    @Autowired
    Effects effects;

    @Value("${spring.kafka.bootstrap-servers}")
    String bootstrapServers;

    @Test
    void withoutSumiSpringKafkaNeverRetriesAFailedMonoUnderTheDefaultErrorHandler() throws Exception {
        // The evidence for the start-up refusal: no Sumi, docs/kafka.md step 4's error handler. The failed
        // Mono's record is skipped: the next record runs, the failed one never again, no DLT.
        template.send(record("mono.plain", "fail-c1")).get(10, TimeUnit.SECONDS);
        await().atMost(Duration.ofSeconds(30)).until(() -> effects.failed("mono-plain", "fail-c1") == 1);
        template.send(record("mono.plain", "ok-c2")).get(10, TimeUnit.SECONDS);

        await().atMost(Duration.ofSeconds(30)).until(() -> effects.done("mono-plain", "ok-c2") == 1);
        assertThat(effects.attempts("mono-plain", "fail-c1"))
                .as("a seek back to the failed record would have run it again before the next one")
                .isEqualTo(1);
        assertThat(effects.dlt).doesNotContain("fail-c1");
    }

    @Test
    void aGuardedMonoListenerOnAContainerWithoutRetryTopicsIsRefusedAtStartUp() {
        // With the opt-in for the loss window: a failed Mono would not even be retried here.
        IllegalStateException refusal =
                refusal(StartupApp.class, "not a retry-topic container", "sumi.kafka.allow-async-listeners=true");
        assertThat(refusal.getMessage()).contains("'mono-refused'", "CompletableFuture or Mono", "@RetryableTopic");
    }

    /**
     * Without the opt-in, also under {@code @RetryableTopic}: Spring Kafka commits a failed Mono's
     * offset before it publishes the retry (KafkaAsyncRetryTopicCommitIntegrationTests), so a crash
     * in between loses the message.
     */
    @Test
    void aGuardedMonoListenerUnderRetryableTopicIsRefusedAtStartUpWithoutTheOptIn() {
        IllegalStateException refusal = refusal(RetryTopicStartupApp.class, "before its retry is published");
        assertThat(refusal.getMessage())
                .contains(
                        "'mono-refused-retry-topic'",
                        "CompletableFuture or Mono",
                        "loses the message",
                        "Return void or a value",
                        "sumi.kafka.allow-async-listeners=true");
    }

    /** The {@link IllegalStateException} whose message contains {@code marker} that failed {@code app}'s start-up. */
    private IllegalStateException refusal(Class<?> app, String marker, String... properties) {
        String[] database = TestDatabase.POSTGRESQL.settings();
        Throwable failure = null;
        try (ConfigurableApplicationContext context = new SpringApplicationBuilder(app)
                .web(WebApplicationType.NONE)
                .properties(
                        "spring.datasource.url=" + database[0],
                        "spring.datasource.username=" + database[1],
                        "spring.datasource.password=" + database[2],
                        "spring.flyway.locations=classpath:db/sumi/{vendor}",
                        "spring.kafka.bootstrap-servers=" + bootstrapServers,
                        "spring.main.register-shutdown-hook=false")
                .properties(properties)
                .run()) {
            fail("An @IdempotentHandler Mono listener started (" + app.getSimpleName() + ")");
        } catch (RuntimeException ex) {
            failure = ex;
        }
        Throwable cause = failure;
        while (cause != null
                && !(cause instanceof IllegalStateException
                        && cause.getMessage() != null
                        && cause.getMessage().contains(marker))) {
            cause = cause.getCause();
        }
        assertThat(cause).as("Sumi's refusal in %s", failure).isNotNull();
        return (IllegalStateException) cause;
    }

    @Test
    void aFailedMonoUnderRetryableTopicIsRunAgainAndCompletedWhenItSucceeds() throws Exception {
        template.send(record("mono.retryable", "r1")).get(10, TimeUnit.SECONDS);

        await().atMost(Duration.ofSeconds(30)).until(() -> effects.done("mono-retryable", "r1") == 1);
        await().atMost(Duration.ofSeconds(10))
                .untilAsserted(() -> assertThat(store.find("mono-retryable", "r1"))
                        .map(ProcessedMessage::status)
                        .contains(MessageStatus.COMPLETED));
        assertThat(effects.attempts("mono-retryable", "r1"))
                .as("the failed Mono released the claim: the retry ran, it was no duplicate")
                .isEqualTo(2);
        assertThat(effects.dlt).doesNotContain("r1");
    }

    @Test
    void aMonoThatAlwaysFailsIsRetriedThenDeadLetteredAndItsRowIsNeverCompleted() throws Exception {
        template.send(record("mono.poison", "p1")).get(10, TimeUnit.SECONDS);

        await().atMost(Duration.ofSeconds(30)).until(() -> effects.dlt.contains("p1"));
        assertThat(effects.attempts("mono-poison", "p1"))
                .as("every retry ran the work again")
                .isEqualTo(ATTEMPTS);
        assertThat(store.find("mono-poison", "p1").map(ProcessedMessage::status))
                .isNotEqualTo(Optional.of(MessageStatus.COMPLETED));
    }

    /** What the listeners did. */
    static class Effects extends ListenerEffects {

        /**
         * Work on another thread, only once subscribed to: fails while {@code attempt} is at most
         * {@code failures}, then succeeds.
         */
        Mono<Void> work(String consumer, String key, int attempt, int failures) {
            return Mono.<Void>fromRunnable(() -> {
                        if (attempt <= failures) {
                            fail(consumer, key);
                            throw new IllegalStateException("the provider timed out (attempt " + attempt + ")");
                        }
                        did(consumer, key);
                    })
                    .subscribeOn(Schedulers.boundedElastic());
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
        KafkaAdmin.NewTopics topics() {
            List<NewTopic> topics = new ArrayList<>();
            for (String topic : List.of("mono.plain", "mono.retryable", "mono.poison")) {
                topics.add(new NewTopic(topic, 1, (short) 1));
                topics.add(new NewTopic(topic + "-dlt", 1, (short) 1));
            }
            return new KafkaAdmin.NewTopics(topics.toArray(NewTopic[]::new));
        }

        /** docs/kafka.md step 4: retries, then the dead-letter topic. */
        @Bean
        DefaultErrorHandler errorHandler(KafkaTemplate<Object, Object> template) {
            return new DefaultErrorHandler(new DeadLetterPublishingRecoverer(template), new FixedBackOff(100, 3));
        }

        @Bean
        Listeners listeners(Effects effects, JdbcTemplate jdbc) {
            jdbc.update("DELETE FROM processed_messages WHERE consumer LIKE 'mono-%'");
            return new Listeners(effects);
        }
    }

    static class Listeners {

        private final Effects effects;

        Listeners(Effects effects) {
            this.effects = effects;
        }

        /** No Sumi: a record whose key starts with {@code fail-} fails its first attempt. */
        @KafkaListener(id = "mono-plain", topics = "mono.plain")
        public Mono<Void> plain(ConsumerRecord<String, String> record) {
            String key = record.key();
            return effects.work("mono-plain", key, effects.attempt("mono-plain", key), key.startsWith("fail-") ? 1 : 0);
        }

        @KafkaListener(id = "mono-retryable", topics = "mono.retryable")
        @RetryableTopic(attempts = "3", backOff = @BackOff(delay = 50))
        @IdempotentHandler(consumer = "mono-retryable", mode = IdempotencyMode.LEASE)
        public Mono<Void> retryable(ConsumerRecord<String, String> record) {
            return effects.work("mono-retryable", record.key(), effects.attempt("mono-retryable", record.key()), 1);
        }

        @KafkaListener(id = "mono-poison", topics = "mono.poison")
        @RetryableTopic(attempts = "3", backOff = @BackOff(delay = 50))
        @IdempotentHandler(consumer = "mono-poison", mode = IdempotencyMode.LEASE)
        public Mono<Void> poison(ConsumerRecord<String, String> record) {
            return effects.work(
                    "mono-poison", record.key(), effects.attempt("mono-poison", record.key()), Integer.MAX_VALUE);
        }

        @DltHandler
        public void onRetryTopicDlt(ConsumerRecord<String, String> record) {
            effects.dlt.add(record.key());
        }

        /** The dead-letter topic of the error handler's listener (DeadLetterPublishingRecoverer's name). */
        @KafkaListener(id = "mono-dlt", topics = "mono.plain-dlt")
        public void onDlt(ConsumerRecord<String, String> record) {
            effects.dlt.add(record.key());
        }
    }

    /** An application with a guarded Mono listener and docs/kafka.md step 4's error handler, no retry topics. */
    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class StartupApp {

        @Bean
        DefaultErrorHandler errorHandler(KafkaTemplate<Object, Object> template) {
            return new DefaultErrorHandler(new DeadLetterPublishingRecoverer(template), new FixedBackOff(100, 3));
        }

        @Bean
        RefusedListener refusedListener() {
            return new RefusedListener();
        }
    }

    /** An application with a guarded Mono listener under {@code @RetryableTopic}, without the opt-in. */
    @SpringBootConfiguration
    @EnableAutoConfiguration
    @EnableKafkaRetryTopic
    static class RetryTopicStartupApp {

        @Bean
        RetryTopicRefusedListener retryTopicRefusedListener() {
            return new RetryTopicRefusedListener();
        }
    }

    static class RetryTopicRefusedListener {

        @KafkaListener(id = "mono-refused-retry-topic", topics = "mono.refused.retry-topic")
        @RetryableTopic(attempts = "2", backOff = @BackOff(delay = 50))
        @IdempotentHandler(consumer = "mono-refused-retry-topic", mode = IdempotencyMode.LEASE)
        public Mono<Void> refused(ConsumerRecord<String, String> record) {
            return Mono.empty();
        }
    }

    static class RefusedListener {

        @KafkaListener(id = "mono-refused", topics = "mono.refused", autoStartup = "true")
        @IdempotentHandler(consumer = "mono-refused", mode = IdempotencyMode.LEASE)
        public Mono<Void> refused(ConsumerRecord<String, String> record) {
            return Mono.empty();
        }
    }
}
