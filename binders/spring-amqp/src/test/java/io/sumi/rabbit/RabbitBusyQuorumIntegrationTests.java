package io.sumi.rabbit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.sumi.consumer.IdempotencyContext;
import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentHandler;
import io.sumi.store.ClaimOutcome;
import io.sumi.store.ClaimRequest;
import io.sumi.store.ClaimResult;
import io.sumi.store.MessageStatus;
import io.sumi.store.ProcessedMessageStore;
import io.sumi.testing.TestRabbit;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.amqp.core.AcknowledgeMode;
import org.springframework.amqp.core.Declarables;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.MessageProperties;
import org.springframework.amqp.rabbit.annotation.EnableRabbit;
import org.springframework.amqp.rabbit.annotation.RabbitListener;
import org.springframework.amqp.rabbit.config.SimpleRabbitListenerContainerFactory;
import org.springframework.amqp.rabbit.connection.CachingConnectionFactory;
import org.springframework.amqp.rabbit.connection.ConnectionFactory;
import org.springframework.amqp.rabbit.core.RabbitAdmin;
import org.springframework.amqp.rabbit.core.RabbitTemplate;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;

/**
 * A busy key on RabbitMQ quorum queues, which count every requeue toward {@code x-delivery-limit}
 * and dead-letter the message past it (reason {@code delivery_limit}): a key whose holder died
 * must be held in place until the holder's lease ends, then run once, never dead-lettered. The
 * queues have a limit of {@value #DELIVERY_LIMIT} and a dead-letter exchange; the holder's lease
 * ({@link #HOLDER_LEASE}) is many times {@code limit × busy interval}.
 */
class RabbitBusyQuorumIntegrationTests {

    static final String RUN = UUID.randomUUID().toString().substring(0, 8);
    static final String PREFIX = "sumi-rabbit-busyq-" + RUN + "-";
    static final int DELIVERY_LIMIT = 2;
    static final Duration HOLDER_LEASE = Duration.ofSeconds(5);
    static final List<String> QUEUES = List.of("record", "batch", "plain");

    static AnnotationConfigApplicationContext context;
    static RabbitTemplate sender;
    static CachingConnectionFactory senderConnections;
    static Listeners listeners;
    static ProcessedMessageStore store;

    @BeforeAll
    static void start() {
        TestRabbit.requireBroker();
        context = RabbitBinderTestWiring.context(PREFIX, Config.class);
        context.refresh();
        senderConnections = TestRabbit.connectionFactory("sumi-rabbit-busyq-" + RUN + "-sender");
        sender = new RabbitTemplate(senderConnections);
        listeners = context.getBean(Listeners.class);
        store = context.getBean(ProcessedMessageStore.class);
    }

    @AfterAll
    static void cleanUp() {
        RabbitBinderTestWiring.cleanUp(
                context, RUN, RabbitBinderTestWiring.withDeadLetterQueues(PREFIX, QUEUES), List.of(PREFIX + "dlx"));
        if (senderConnections != null) {
            senderConnections.destroy();
        }
    }

    static void send(String queue, String key, String payload) {
        MessageProperties properties = new MessageProperties();
        properties.setContentType(MessageProperties.CONTENT_TYPE_TEXT_PLAIN);
        properties.setHeader("outbox-id", key);
        sender.send("", PREFIX + queue, new Message(payload.getBytes(StandardCharsets.UTF_8), properties));
    }

    static @Nullable Message deadLetter(String queue) {
        return sender.receive(PREFIX + queue + ".dlq");
    }

    /** A claim by a consumer that then died: never completed, never released, its lease runs out. */
    static void claimByADeadHolder(String consumer, String key) {
        ClaimResult holder = store.claim(consumer, new ClaimRequest(key, null), HOLDER_LEASE);
        assertThat(holder.outcome()).isEqualTo(ClaimOutcome.CLAIMED);
    }

    @Test
    void theBrokerCountsRequeuesOnTheseQueuesAndDeadLettersPastTheLimit() {
        // Negative control: a plain listener that requeues its message every time loses it to the
        // dead-letter exchange with reason delivery_limit, so the queues below really count.
        String key = RUN + "-plain";
        send("plain", key, "plain");

        Message[] dead = new Message[1];
        await().atMost(Duration.ofSeconds(30)).until(() -> (dead[0] = deadLetter("plain")) != null);
        assertThat(listeners.attempts("plain:" + key)).isEqualTo(DELIVERY_LIMIT + 1);
        assertThat(dead[0].getMessageProperties().getXDeathHeader())
                .first()
                .satisfies(death -> assertThat(death.get("reason")).isEqualTo("delivery_limit"));
    }

    @Test
    void aBusyKeyWhoseHolderDiedIsHeldUntilTheLeaseEndsThenRunsOnceNeverDeadLettered() {
        String key = RUN + "-record";
        claimByADeadHolder("Listeners.record", key);
        send("record", key, "record");

        await().atMost(Duration.ofSeconds(40))
                .until(() -> listeners.attempts("record:" + key) == 1 || peekDeadLetter("record"));
        assertThat(deadLetter("record")).as("not dead-lettered").isNull();
        assertThat(listeners.attempts("record:" + key)).isEqualTo(1);
        assertThat(listeners.redelivered("record:" + key))
                .as("held by its consumer, never requeued")
                .isFalse();
        await().atMost(Duration.ofSeconds(10))
                .until(() -> store.find("Listeners.record", key)
                        .map(row -> row.status() == MessageStatus.COMPLETED)
                        .orElse(false));
    }

    @Test
    void aConsumerBatchWithABusyKeyIsHeldUntilTheLeaseEndsAndEveryMessageRunsOnce() {
        List<String> keys = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            keys.add(RUN + "-batch-" + i);
        }
        claimByADeadHolder("Listeners.batch", keys.get(1));
        keys.forEach(key -> send("batch", key, "batch"));

        await().atMost(Duration.ofSeconds(40))
                .until(() -> keys.stream().allMatch(key -> listeners.attempts("batch:" + key) == 1)
                        || peekDeadLetter("batch"));
        assertThat(deadLetter("batch")).as("none dead-lettered").isNull();
        for (String key : keys) {
            assertThat(listeners.attempts("batch:" + key)).as(key).isEqualTo(1);
            assertThat(listeners.redelivered("batch:" + key))
                    .as(key + " never requeued")
                    .isFalse();
        }
    }

    /** Whether the dead-letter queue of {@code queue} holds a message (left there for the assertion). */
    static boolean peekDeadLetter(String queue) {
        var info = context.getBean(RabbitAdmin.class).getQueueInfo(PREFIX + queue + ".dlq");
        return info != null && info.getMessageCount() > 0;
    }

    static class Listeners {

        private final Map<String, AtomicInteger> attempts = new ConcurrentHashMap<>();
        private final Map<String, Boolean> redelivered = new ConcurrentHashMap<>();

        int attempts(String what) {
            AtomicInteger n = attempts.get(what);
            return n == null ? 0 : n.get();
        }

        boolean redelivered(String what) {
            return redelivered.getOrDefault(what, false);
        }

        private void record(String what, Message message) {
            attempts.computeIfAbsent(what, k -> new AtomicInteger()).incrementAndGet();
            Object count = message.getMessageProperties().getHeaders().get("x-delivery-count");
            if (message.getMessageProperties().isRedelivered() || (count instanceof Number n && n.longValue() > 0)) {
                redelivered.put(what, true);
            }
        }

        @RabbitListener(queues = "${it.prefix}record")
        @IdempotentHandler(mode = IdempotencyMode.LEASE)
        public void record(Message message) {
            record("record:" + IdempotencyContext.current().key(), message);
        }

        @RabbitListener(queues = "${it.prefix}batch", containerFactory = "batch")
        @IdempotentHandler(mode = IdempotencyMode.LEASE)
        public void batch(List<Message> messages) {
            for (Message message : messages) {
                record("batch:" + message.getMessageProperties().getHeaders().get("outbox-id"), message);
            }
        }

        @RabbitListener(queues = "${it.prefix}plain")
        public void plain(Message message) {
            record("plain:" + message.getMessageProperties().getHeaders().get("outbox-id"), message);
            throw new IllegalStateException("requeue me");
        }
    }

    @Configuration(proxyBeanMethods = false)
    @EnableRabbit
    @Import({SumiRabbitTestBeans.class, RabbitBinderTestWiring.Broker.class})
    static class Config {

        @Bean
        Declarables queues() {
            return TestRabbit.quorumQueuesWithDeadLetters(PREFIX, QUEUES, DELIVERY_LIMIT);
        }

        /** Spring AMQP's default: a failed listener's message is requeued. */
        @Bean
        SimpleRabbitListenerContainerFactory rabbitListenerContainerFactory(ConnectionFactory connectionFactory) {
            SimpleRabbitListenerContainerFactory factory = new SimpleRabbitListenerContainerFactory();
            factory.setConnectionFactory(connectionFactory);
            factory.setPrefetchCount(10);
            factory.setAcknowledgeMode(AcknowledgeMode.AUTO);
            factory.setDefaultRequeueRejected(true);
            return factory;
        }

        @Bean
        SimpleRabbitListenerContainerFactory batch(ConnectionFactory connectionFactory) {
            SimpleRabbitListenerContainerFactory factory = rabbitListenerContainerFactory(connectionFactory);
            factory.setBatchListener(true);
            factory.setConsumerBatchEnabled(true);
            factory.setBatchSize(4);
            factory.setBatchReceiveTimeout(2000L);
            factory.setPrefetchCount(10);
            return factory;
        }

        @Bean
        Listeners listeners() {
            return new Listeners();
        }
    }
}
