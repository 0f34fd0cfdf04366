package io.sumi.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentHandler;
import io.sumi.store.MessageStatus;
import io.sumi.testing.RunCounter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.core.ConsumerFactory;
import org.springframework.kafka.core.KafkaAdmin;
import org.springframework.kafka.core.ProducerFactory;
import org.springframework.kafka.listener.ContainerProperties;
import org.springframework.kafka.listener.KafkaMessageListenerContainer;
import org.springframework.kafka.requestreply.KafkaReplyTimeoutException;
import org.springframework.kafka.requestreply.ReplyingKafkaTemplate;
import org.springframework.kafka.support.KafkaHeaders;
import org.springframework.messaging.Message;
import org.springframework.messaging.handler.annotation.SendTo;
import org.springframework.messaging.support.MessageBuilder;

/**
 * {@code @IdempotentHandler(storeReply = true)} on {@code @KafkaListener} + {@code @SendTo}
 * methods, driven by Spring Kafka's {@link ReplyingKafkaTemplate} against an in-process broker and
 * the local PostgreSQL: a request delivered twice (the same {@code outbox-id}, two requesters with
 * their own correlation ids) gets the same reply twice while the handler runs once, in lease and
 * transactional mode; without {@code storeReply} the duplicate gets no reply (the negative
 * control); a reply over {@code sumi.consumer.reply.max-size} fails its message before anything
 * is completed or sent.
 */
@SpringBootTest(
        classes = KafkaReplyIntegrationTests.App.class,
        properties = {
            "spring.kafka.consumer.auto-offset-reset=earliest",
            "spring.kafka.listener.concurrency=1",
            "spring.flyway.locations=classpath:db/sumi/{vendor}",
            "spring.datasource.hikari.maximum-pool-size=4",
            "sumi.consumer.reply.max-size=1KB"
        })
class KafkaReplyIntegrationTests extends KafkaStarterTestBase {

    static final String REPLIES = "replies.topic";

    /** Long enough for a reply that comes; a reply that must not come is waited for this long. */
    static final Duration REPLY_TIMEOUT = Duration.ofSeconds(20);

    static final Duration NO_REPLY_WAIT = Duration.ofSeconds(4);

    @Autowired
    Requester requesterBean;

    ReplyingKafkaTemplate<String, String, String> requester;

    @Autowired
    RunCounter runs;

    @Autowired
    MeterRegistry meters;

    @Autowired
    JdbcTemplate jdbc;

    @BeforeEach
    void replyContainerIsAssigned() throws Exception {
        requester = requesterBean.template();
        assertThat(requester.waitForAssignment(Duration.ofSeconds(30))).isTrue();
    }

    static ProducerRecord<String, String> request(String topic, String outboxId, String payload) {
        ProducerRecord<String, String> record = new ProducerRecord<>(topic, outboxId, payload);
        record.headers().add("outbox-id", outboxId.getBytes(StandardCharsets.UTF_8));
        return record;
    }

    ConsumerRecord<String, String> ask(ProducerRecord<String, String> request) throws Exception {
        return requester.sendAndReceive(request, REPLY_TIMEOUT).get(REPLY_TIMEOUT.toSeconds() + 5, TimeUnit.SECONDS);
    }

    static byte[] correlation(ConsumerRecord<?, ?> record) {
        return record.headers().lastHeader(KafkaHeaders.CORRELATION_ID).value();
    }

    @Test
    void aDuplicatedRequestGetsTheSameReplyWithItsOwnCorrelationIdWhileTheHandlerRunsOnceInLeaseMode()
            throws Exception {
        ConsumerRecord<String, String> first = ask(request("reply.lease", "order-1", "ping"));
        ConsumerRecord<String, String> second = ask(request("reply.lease", "order-1", "ping"));

        assertThat(first.value()).isEqualTo("pong:ping:run-1");
        assertThat(second.value()).isEqualTo(first.value());
        assertThat(correlation(second)).isNotEqualTo(correlation(first));
        assertThat(runs.of("reply-lease")).isEqualTo(1);
        assertThat(store.findReply("reply-lease", "order-1")).isPresent();
        assertThat(meters.get("sumi.replies")
                        .tag("consumer", "reply-lease")
                        .tag("result", "replayed")
                        .counter()
                        .count())
                .isEqualTo(1);
    }

    @Test
    void aDuplicatedRequestGetsTheSameReplyWhileTheHandlerRunsOnceInTransactionalMode() throws Exception {
        ConsumerRecord<String, String> first = ask(request("reply.tx", "order-2", "ping"));
        ConsumerRecord<String, String> second = ask(request("reply.tx", "order-2", "ping"));

        assertThat(first.value()).isEqualTo("pong:ping:run-1");
        assertThat(second.value()).isEqualTo(first.value());
        assertThat(correlation(second)).isNotEqualTo(correlation(first));
        assertThat(runs.of("reply-tx")).isEqualTo(1);
        assertThat(store.find("reply-tx", "order-2"))
                .get()
                .extracting(row -> row.status())
                .isEqualTo(MessageStatus.COMPLETED);
        assertThat(store.findReply("reply-tx", "order-2")).isPresent();
    }

    /** The negative control: the same listener without storeReply leaves the duplicate's requester waiting. */
    @Test
    void withoutStoreReplyTheDuplicateGetsNoReply() throws Exception {
        ConsumerRecord<String, String> first = ask(request("reply.off", "order-3", "ping"));
        assertThat(first.value()).isEqualTo("pong:ping:run-1");

        assertThatThrownBy(() -> requester
                        .sendAndReceive(request("reply.off", "order-3", "ping"), NO_REPLY_WAIT)
                        .get(REPLY_TIMEOUT.toSeconds(), TimeUnit.SECONDS))
                .isInstanceOf(ExecutionException.class)
                .hasCauseInstanceOf(KafkaReplyTimeoutException.class);
        assertThat(runs.of("reply-off")).isEqualTo(1);
    }

    @Test
    void aMessageReplyKeepsItsOwnHeadersAndTakesTheNewRequestsCorrelationId() throws Exception {
        ConsumerRecord<String, String> first = ask(request("reply.message", "order-4", "ping"));
        ConsumerRecord<String, String> second = ask(request("reply.message", "order-4", "ping"));

        assertThat(second.value()).isEqualTo(first.value()).isEqualTo("pong:ping:run-1");
        assertThat(new String(second.headers().lastHeader("reply-note").value(), StandardCharsets.UTF_8))
                .isEqualTo("kept");
        assertThat(correlation(second)).isNotEqualTo(correlation(first));
        assertThat(runs.of("reply-message")).isEqualTo(1);
    }

    @Test
    void aReplyOverTheMaxSizeFailsTheMessageBeforeItIsCompletedOrSent() throws Exception {
        assertThatThrownBy(() -> requester
                        .sendAndReceive(request("reply.big", "order-5", "ping"), NO_REPLY_WAIT)
                        .get(REPLY_TIMEOUT.toSeconds(), TimeUnit.SECONDS))
                .isInstanceOf(ExecutionException.class)
                .hasCauseInstanceOf(KafkaReplyTimeoutException.class);

        await().atMost(Duration.ofSeconds(20))
                .until(() -> meters.find("sumi.replies")
                                .tag("consumer", "reply-big")
                                .tag("result", "too_large")
                                .counter()
                        != null);
        // Not retryable: dead-lettered (here: the error handler's logging recoverer) after one run.
        assertThat(runs.of("reply-big")).isEqualTo(1);
        assertThat(store.find("reply-big", "order-5")).get().satisfies(row -> {
            assertThat(row.status()).isEqualTo(MessageStatus.IN_PROGRESS);
            assertThat(row.lastError()).contains("sumi.consumer.reply.max-size");
        });
        assertThat(store.findReply("reply-big", "order-5")).isEmpty();
    }

    static class Listeners {

        private final RunCounter runs;

        Listeners(RunCounter runs) {
            this.runs = runs;
        }

        @KafkaListener(id = "reply-lease", topics = "reply.lease")
        @SendTo
        @IdempotentHandler(mode = IdempotencyMode.LEASE, storeReply = true)
        String lease(String request) {
            return "pong:" + request + ":run-" + runs.next("reply-lease");
        }

        @KafkaListener(id = "reply-tx", topics = "reply.tx")
        @SendTo
        @IdempotentHandler(mode = IdempotencyMode.TRANSACTIONAL, storeReply = true)
        String transactional(String request) {
            return "pong:" + request + ":run-" + runs.next("reply-tx");
        }

        @KafkaListener(id = "reply-off", topics = "reply.off")
        @SendTo
        @IdempotentHandler(mode = IdempotencyMode.LEASE)
        String off(String request) {
            return "pong:" + request + ":run-" + runs.next("reply-off");
        }

        @KafkaListener(id = "reply-message", topics = "reply.message")
        @SendTo
        @IdempotentHandler(mode = IdempotencyMode.LEASE, storeReply = true)
        Message<String> message(String request) {
            return MessageBuilder.withPayload("pong:" + request + ":run-" + runs.next("reply-message"))
                    .setHeader("reply-note", "kept")
                    .build();
        }

        @KafkaListener(id = "reply-big", topics = "reply.big")
        @SendTo
        @IdempotentHandler(mode = IdempotencyMode.LEASE, storeReply = true)
        String big(String request) {
            runs.next("reply-big");
            return "x".repeat(2048);
        }
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class App {

        @Bean
        RunCounter runs() {
            return new RunCounter();
        }

        @Bean
        MeterRegistry meterRegistry() {
            return new SimpleMeterRegistry();
        }

        @Bean
        Listeners listeners(RunCounter runs, JdbcTemplate jdbc) {
            jdbc.update("DELETE FROM processed_messages WHERE consumer LIKE 'reply-%'");
            return new Listeners(runs);
        }

        @Bean
        KafkaAdmin.NewTopics topics() {
            return new KafkaAdmin.NewTopics(
                    new NewTopic("reply.lease", 1, (short) 1),
                    new NewTopic("reply.tx", 1, (short) 1),
                    new NewTopic("reply.off", 1, (short) 1),
                    new NewTopic("reply.message", 1, (short) 1),
                    new NewTopic("reply.big", 1, (short) 1),
                    new NewTopic(REPLIES, 1, (short) 1));
        }

        /**
         * The requester, wrapped: a ReplyingKafkaTemplate bean is a KafkaTemplate, which would make
         * Boot's own KafkaTemplate (the listeners' reply template) back off.
         */
        @Bean(initMethod = "start", destroyMethod = "stop")
        Requester requester(ProducerFactory<String, String> producers, ConsumerFactory<String, String> consumers) {
            ContainerProperties properties = new ContainerProperties(REPLIES);
            properties.setGroupId("reply-requester");
            KafkaMessageListenerContainer<String, String> replies =
                    new KafkaMessageListenerContainer<>(consumers, properties);
            return new Requester(new ReplyingKafkaTemplate<>(producers, replies));
        }
    }

    record Requester(ReplyingKafkaTemplate<String, String, String> template) {

        void start() {
            template.start();
        }

        void stop() {
            template.stop();
        }
    }
}
