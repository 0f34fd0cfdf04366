package io.sumi.rabbit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Channel;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sumi.consumer.IdempotencyContext;
import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentHandler;
import io.sumi.consumer.exception.BatchFailedException;
import io.sumi.store.ClaimOutcome;
import io.sumi.store.ClaimRequest;
import io.sumi.store.ClaimResult;
import io.sumi.store.MessageStatus;
import io.sumi.store.ProcessedMessageStore;
import io.sumi.testing.BusyClaimLatches;
import io.sumi.testing.TestRabbit;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.amqp.core.AcknowledgeMode;
import org.springframework.amqp.core.Binding;
import org.springframework.amqp.core.BindingBuilder;
import org.springframework.amqp.core.Declarables;
import org.springframework.amqp.core.DirectExchange;
import org.springframework.amqp.core.FanoutExchange;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.MessageProperties;
import org.springframework.amqp.core.Queue;
import org.springframework.amqp.core.QueueBuilder;
import org.springframework.amqp.rabbit.annotation.EnableRabbit;
import org.springframework.amqp.rabbit.annotation.RabbitListener;
import org.springframework.amqp.rabbit.config.RetryInterceptorBuilder;
import org.springframework.amqp.rabbit.config.SimpleRabbitListenerContainerFactory;
import org.springframework.amqp.rabbit.connection.CachingConnectionFactory;
import org.springframework.amqp.rabbit.connection.ConnectionFactory;
import org.springframework.amqp.rabbit.core.RabbitAdmin;
import org.springframework.amqp.rabbit.core.RabbitTemplate;
import org.springframework.amqp.rabbit.retry.RepublishMessageRecoverer;
import org.springframework.amqp.support.AmqpHeaders;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.messaging.handler.annotation.Header;
import org.springframework.util.ReflectionUtils;

/**
 * {@code @IdempotentHandler} on {@code @RabbitListener} methods against the real RabbitMQ
 * (127.0.0.1:5672) and the local PostgreSQL: one Spring context for the class, every exchange and
 * queue named after this run and deleted afterwards, ledger rows keyed by the run.
 */
class RabbitListenerIdempotencyIntegrationTests {

    static final String RUN = UUID.randomUUID().toString().substring(0, 8);
    static final String PREFIX = "sumi-rabbit-it-" + RUN + "-";
    static final String CONNECTION_NAME = RabbitBinderTestWiring.connectionName(PREFIX);
    static final Duration BUSY_INTERVAL = SumiRabbitTestBeans.BUSY_INTERVAL;

    static final List<String> QUEUES = List.of(
            "dup",
            "compete-a",
            "compete-b",
            "styles",
            "poison",
            "nokey",
            "busy",
            "batch",
            "batch-nokey",
            "manual",
            "manual-nack",
            "manual-defer",
            "tx-batch-nokey",
            "resilient");

    /** After how many effects the resilient test drops the listeners' connection. */
    static final List<Integer> RESILIENT_DROPS_AT = List.of(50, 150);

    static AnnotationConfigApplicationContext context;
    static RabbitTemplate sender;
    static CachingConnectionFactory senderConnections;
    static Listeners listeners;
    static ProcessedMessageStore store;
    static SimpleMeterRegistry meters;

    @BeforeAll
    static void start() {
        context = RabbitBinderTestWiring.context(PREFIX, Config.class);
        context.refresh();
        // The sender has a connection of its own: the connection-loss test cuts only the listeners'.
        senderConnections = TestRabbit.connectionFactory(CONNECTION_NAME + "-sender");
        sender = new RabbitTemplate(senderConnections);
        listeners = context.getBean(Listeners.class);
        store = context.getBean(ProcessedMessageStore.class);
        meters = context.getBean(SimpleMeterRegistry.class);
    }

    @AfterAll
    static void cleanUp() {
        RabbitBinderTestWiring.cleanUp(
                context,
                RUN,
                RabbitBinderTestWiring.withDeadLetterQueues(PREFIX, QUEUES),
                List.of(PREFIX + "dlx", PREFIX + "compete"));
        if (senderConnections != null) {
            senderConnections.destroy();
        }
    }

    static void send(String queue, @Nullable String key, String payload) {
        MessageProperties properties = new MessageProperties();
        properties.setContentType(MessageProperties.CONTENT_TYPE_TEXT_PLAIN);
        if (key != null) {
            properties.setHeader("outbox-id", key);
        }
        sender.send("", PREFIX + queue, new Message(payload.getBytes(StandardCharsets.UTF_8), properties));
    }

    static void publish(String exchange, String key, String payload) {
        MessageProperties properties = new MessageProperties();
        properties.setContentType(MessageProperties.CONTENT_TYPE_TEXT_PLAIN);
        properties.setHeader("outbox-id", key);
        sender.send(PREFIX + exchange, "", new Message(payload.getBytes(StandardCharsets.UTF_8), properties));
    }

    static @Nullable Message deadLetter(String queue) {
        return sender.receive(PREFIX + queue + ".dlq");
    }

    static double count(String consumer, String outcome) {
        Counter counter = meters.find("sumi.messages")
                .tag("consumer", consumer)
                .tag("outcome", outcome)
                .counter();
        return counter == null ? 0 : counter.count();
    }

    // ------------------------------------------------------------------ tests

    @Test
    void duplicatesDeliveredToFourConcurrentConsumersOfOneQueueHaveOneEffectEach() {
        for (int i = 0; i < 50; i++) {
            for (int copy = 0; copy < 3; copy++) {
                send("dup", RUN + "-dup-" + i, "payload-" + i);
            }
        }

        await().atMost(Duration.ofSeconds(60))
                .until(() -> count("dup", "processed") + count("dup", "duplicate") == 150);
        assertThat(listeners.effects("dup"))
                .hasSize(50)
                .allSatisfy((key, n) -> assertThat(n.get()).isEqualTo(1));
        assertThat(count("dup", "duplicate")).isEqualTo(100);
        assertThat(listeners.threads("dup")).as("four consumers took part").hasSizeGreaterThan(1);
        assertThat(store.find("dup", RUN + "-dup-7"))
                .get()
                .extracting(row -> row.status())
                .isEqualTo(MessageStatus.COMPLETED);
    }

    @Test
    void competingQueuesOfOneConsumerNameRunEachKeyOnceAcrossBoth() {
        // A fanout exchange copies every message to both queues; their listeners share one consumer name.
        for (int i = 0; i < 40; i++) {
            publish("compete", RUN + "-c-" + i, "v" + i);
        }

        await().atMost(Duration.ofSeconds(60))
                .until(() -> count("compete", "processed") + count("compete", "duplicate") == 80);
        assertThat(listeners.effects("compete"))
                .hasSize(40)
                .allSatisfy((key, n) -> assertThat(n.get()).isEqualTo(1));
        // Which queue's listener wins a key is a race (on a fast machine one may win them all), so
        // the check is on the sum: every key ran once and its other copy was a duplicate.
        assertThat(count("compete", "processed")).isEqualTo(40.0);
        assertThat(count("compete", "duplicate")).isEqualTo(40.0);
    }

    @Test
    void everyParameterStyleFindsTheKeyOfTheDelivery() {
        String key = RUN + "-style";
        send("styles", key, "styled");
        send("styles", key, "styled");

        await().atMost(Duration.ofSeconds(30)).until(() -> count("styles", "duplicate") == 1);
        assertThat(listeners.effects("styles")).containsOnlyKeys(key);
        assertThat(listeners.styleHeaders()).containsExactly(key);
    }

    @Test
    void aPoisonMessageIsRetriedByTheContainersRetryThenRepublishedToTheDeadLetterExchangeWithReasonHeaders() {
        String key = RUN + "-poison";
        send("poison", key, "poison payload");

        Message[] dead = new Message[1];
        await().atMost(Duration.ofSeconds(30)).until(() -> (dead[0] = deadLetter("poison")) != null);
        Map<String, Object> headers = dead[0].getMessageProperties().getHeaders();
        assertThat(String.valueOf(headers.get(RepublishMessageRecoverer.X_EXCEPTION_MESSAGE)))
                .contains("poisoned payload " + key);
        assertThat(String.valueOf(headers.get(RepublishMessageRecoverer.X_EXCEPTION_STACKTRACE)))
                .contains("IllegalStateException");
        assertThat(headers.get("outbox-id")).isEqualTo(key);
        assertThat(new String(dead[0].getBody(), StandardCharsets.UTF_8)).isEqualTo("poison payload");
        assertThat(listeners.attempts("poison:" + key)).isEqualTo(3);
        assertThat(store.find("Listeners.poison", key)).get().satisfies(row -> {
            assertThat(row.status()).isNotEqualTo(MessageStatus.COMPLETED);
            assertThat(row.lastError()).contains("poisoned payload");
        });
    }

    @Test
    void aMessageWithoutAKeyIsRejectedToTheDeadLetterExchangeAtOnceNotRetried() {
        send("nokey", null, "no key here");

        Message[] dead = new Message[1];
        await().atMost(Duration.ofSeconds(30)).until(() -> (dead[0] = deadLetter("nokey")) != null);
        assertThat(new String(dead[0].getBody(), StandardCharsets.UTF_8)).isEqualTo("no key here");
        // RabbitMQ's own dead-lettering: x-death says why (rejected) and where from.
        @SuppressWarnings("unchecked")
        List<Map<String, Object>> death = (List<Map<String, Object>>)
                dead[0].getMessageProperties().getHeaders().get("x-death");
        assertThat(death).isNotEmpty();
        assertThat(String.valueOf(death.get(0).get("reason"))).isEqualTo("rejected");
        assertThat(String.valueOf(death.get(0).get("queue"))).isEqualTo(PREFIX + "nokey");
        // Not given to the container's retry interceptor (it would have republished it with x-exception-*).
        assertThat(dead[0].getMessageProperties().getHeaders())
                .doesNotContainKey(RepublishMessageRecoverer.X_EXCEPTION_MESSAGE);
        assertThat(listeners.attempts("nokey")).isZero();
        assertThat(count("Listeners.noKey", "rejected")).isEqualTo(1);
    }

    @Test
    void aBusyKeyIsHeldAndRunAgainInPlaceUntilTheOtherConsumerLetsGoAndNeverDeadLettered() throws Exception {
        String key = RUN + "-busy";
        ClaimResult holder = store.claim("Listeners.busy", new ClaimRequest(key, null), Duration.ofSeconds(60));
        assertThat(holder.outcome()).isEqualTo(ClaimOutcome.CLAIMED);
        send("busy", key, "busy payload");

        await().atMost(Duration.ofSeconds(30)).until(() -> count("Listeners.busy", "busy") >= 3);
        // Not a hot loop: one run per BUSY_INTERVAL (300 ms) at most, so three more take two intervals or more.
        double before = count("Listeners.busy", "busy");
        long startedAt = System.nanoTime();
        await().atMost(Duration.ofSeconds(30))
                .pollInterval(Duration.ofMillis(10))
                .until(() -> count("Listeners.busy", "busy") >= before + 3);
        assertThat(Duration.ofNanos(System.nanoTime() - startedAt))
                .isGreaterThanOrEqualTo(BUSY_INTERVAL.multipliedBy(2));
        assertThat(listeners.attempts("busy:" + key)).isZero();

        store.release(holder.message(), "the other consumer failed");

        // The attempt is counted when the handler starts; its completion is written after it returns.
        await().atMost(Duration.ofSeconds(30))
                .until(() -> store.find("Listeners.busy", key)
                        .map(row -> row.status() == MessageStatus.COMPLETED)
                        .orElse(false));
        assertThat(listeners.attempts("busy:" + key)).isEqualTo(1);
        assertThat(deadLetter("busy")).as("the retry interceptor never saw it").isNull();
    }

    @Test
    void aConsumerBatchThatFailsInTheMiddleIsRedeliveredAndEveryMessageHasOneEffect() {
        // The container starts once all ten are queued, so it gets them as batches (up to ten each),
        // not one by one as they arrive (a batch is cut after 1 s without the next message).
        for (int i = 0; i < 10; i++) {
            send("batch", RUN + "-b-" + i, i == 5 ? "fail-once" : "ok-" + i);
        }
        context.getBean(org.springframework.amqp.rabbit.listener.RabbitListenerEndpointRegistry.class)
                .getListenerContainer("batch")
                .start();

        await().atMost(Duration.ofSeconds(60))
                .until(() -> listeners.effects("batch").size() == 10);
        assertThat(listeners.effects("batch"))
                .allSatisfy((key, n) -> assertThat(n.get()).isEqualTo(1));
        assertThat(listeners.batchFailures()).isEqualTo(1);
        assertThat(listeners.batchSizes())
                .as("delivered as batches")
                .anySatisfy(size -> assertThat(size).isGreaterThan(1));
        for (int i = 0; i < 10; i++) {
            assertThat(store.find("batch", RUN + "-b-" + i))
                    .get()
                    .extracting(row -> row.status())
                    .isEqualTo(MessageStatus.COMPLETED);
        }
    }

    @Test
    void aMessageWithoutAKeyInAConsumerBatchIsDeadLetteredAndTheOthersAreProcessedOnce() {
        for (int i = 0; i < 6; i++) {
            send("batch-nokey", i == 3 ? null : RUN + "-bn-" + i, "m" + i);
        }

        Message[] dead = new Message[1];
        await().atMost(Duration.ofSeconds(30)).until(() -> (dead[0] = deadLetter("batch-nokey")) != null);
        assertThat(new String(dead[0].getBody(), StandardCharsets.UTF_8)).isEqualTo("m3");
        await().atMost(Duration.ofSeconds(30))
                .until(() -> listeners.effects("batch-nokey").size() == 5);
        assertThat(listeners.effects("batch-nokey"))
                .allSatisfy((key, n) -> assertThat(n.get()).isEqualTo(1));
        assertThat(deadLetter("batch-nokey")).isNull();
    }

    @Test
    void withManualAcknowledgementDuplicatesAreAcknowledgedBySumiAndProcessedOnce() {
        for (int i = 0; i < 10; i++) {
            send("manual", RUN + "-m-" + i, "m" + i);
            send("manual", RUN + "-m-" + i, "m" + i);
        }

        await().atMost(Duration.ofSeconds(30)).until(() -> count("manual", "duplicate") == 10);
        assertThat(listeners.effects("manual"))
                .hasSize(10)
                .allSatisfy((key, n) -> assertThat(n.get()).isEqualTo(1));
        // Everything acknowledged: nothing left in the queue or unacknowledged on the channel.
        await().atMost(Duration.ofSeconds(10))
                .untilAsserted(() -> assertThat(
                                context.getBean(RabbitAdmin.class).getQueueInfo(PREFIX + "manual"))
                        .satisfies(info -> assertThat(info.getMessageCount()).isZero()));
        context.getBean(org.springframework.amqp.rabbit.listener.RabbitListenerEndpointRegistry.class)
                .getListenerContainer("manual")
                .stop();
        assertThat(context.getBean(RabbitAdmin.class)
                        .getQueueInfo(PREFIX + "manual")
                        .getMessageCount())
                .as("no unacknowledged duplicate went back to the queue when the consumer stopped")
                .isZero();
    }

    @Test
    void withManualAcknowledgementANackOrRejectWithRequeueIsNotDoneAndTheRedeliveryRuns() {
        // First delivery: the listener nacks (or rejects) with requeue and returns; Sumi must not
        // complete the row, or the redelivery would be skipped as a duplicate and the work lost.
        send("manual-nack", RUN + "-mn-nack", "nack");
        send("manual-nack", RUN + "-mn-reject", "reject");

        await().atMost(Duration.ofSeconds(30))
                .until(() -> listeners.effects("manual-nack").size() == 2);
        assertThat(listeners.attempts("manual-nack:" + RUN + "-mn-nack")).isEqualTo(2);
        assertThat(listeners.attempts("manual-nack:" + RUN + "-mn-reject")).isEqualTo(2);
        assertThat(listeners.effects("manual-nack"))
                .allSatisfy((key, n) -> assertThat(n.get()).isEqualTo(1));
        await().atMost(Duration.ofSeconds(10))
                .untilAsserted(() -> assertThat(store.find("manual-nack", RUN + "-mn-nack"))
                        .get()
                        .extracting(row -> row.status())
                        .isEqualTo(MessageStatus.COMPLETED));
    }

    @Test
    void withManualAcknowledgementANackWithoutRequeueDeadLettersAndTheRowIsNotCompleted() {
        String key = RUN + "-mn-dead";
        send("manual-nack", key, "dead");

        Message[] dead = new Message[1];
        await().atMost(Duration.ofSeconds(30)).until(() -> (dead[0] = deadLetter("manual-nack")) != null);
        assertThat(dead[0].getMessageProperties().getHeaders()).containsEntry("outbox-id", key);
        assertThat(listeners.attempts("manual-nack:" + key)).isEqualTo(1);
        assertThat(store.find("manual-nack", key))
                .as("the application gave the message up: Sumi must not say it was processed")
                .satisfies(row -> assertThat(row.map(r -> r.status()))
                        .isNotEqualTo(java.util.Optional.of(MessageStatus.COMPLETED)));
    }

    @Test
    void withManualAcknowledgementSumisRejectionLeavesTheApplicationsUnacknowledgedDeliveriesAlone() {
        // A is run and kept unacknowledged by the listener (it acknowledges later); B has no key.
        String keyA = RUN + "-md-a";
        send("manual-defer", keyA, "defer");
        await().atMost(Duration.ofSeconds(30)).until(() -> listeners.deferredAck() != null);
        send("manual-defer", null, "keyless");

        Message[] dead = new Message[1];
        await().atMost(Duration.ofSeconds(30)).until(() -> (dead[0] = deadLetter("manual-defer")) != null);
        assertThat(new String(dead[0].getBody(), StandardCharsets.UTF_8)).isEqualTo("keyless");
        // C runs after B: a requeued A would come back before it (requeued messages go to the head).
        String keyC = RUN + "-md-c";
        send("manual-defer", keyC, "after");
        await().atMost(Duration.ofSeconds(30)).until(() -> listeners.attempts("manual-defer:" + keyC) == 1);
        try {
            assertThat(deadLetter("manual-defer"))
                    .as("A, which the application had not settled, was not dead-lettered with B (multiple=true)")
                    .isNull();
            assertThat(listeners.attempts("manual-defer:" + keyA))
                    .as("A was not requeued and run again")
                    .isEqualTo(1);
        } finally {
            java.util.Objects.requireNonNull(listeners.deferredAck()).run();
        }
    }

    @Test
    void onAChannelTransactedContainerAKeylessMessageOfABatchIsDeadLetteredOnceAndTheOthersRun() {
        // One batch (the container starts after all three are queued): good, keyless, good. The
        // container's channel rollback would undo a reject and requeue the batch for ever.
        send("tx-batch-nokey", RUN + "-txb-1", "good-1");
        send("tx-batch-nokey", null, "keyless");
        send("tx-batch-nokey", RUN + "-txb-2", "good-2");
        var container = context.getBean(org.springframework.amqp.rabbit.listener.RabbitListenerEndpointRegistry.class)
                .getListenerContainer("tx-batch-nokey");
        container.start();

        Message[] dead = new Message[1];
        await().atMost(Duration.ofSeconds(30)).until(() -> (dead[0] = deadLetter("tx-batch-nokey")) != null);
        assertThat(new String(dead[0].getBody(), StandardCharsets.UTF_8)).isEqualTo("keyless");
        assertThat(dead[0].getMessageProperties().getHeaders()).containsKey("x-sumi-rejected-reason");
        await().atMost(Duration.ofSeconds(30))
                .until(() -> listeners.effects("tx-batch-nokey").size() == 2);
        await().atMost(Duration.ofSeconds(10))
                .untilAsserted(() -> assertThat(context.getBean(RabbitAdmin.class)
                                .getQueueInfo(PREFIX + "tx-batch-nokey")
                                .getMessageCount())
                        .isZero());
        container.stop();
        assertThat(context.getBean(RabbitAdmin.class)
                        .getQueueInfo(PREFIX + "tx-batch-nokey")
                        .getMessageCount())
                .as("the batch was acknowledged (committed), not left to come back")
                .isZero();
        assertThat(deadLetter("tx-batch-nokey")).as("dead-lettered once").isNull();
        assertThat(listeners.effects("tx-batch-nokey"))
                .allSatisfy((key, n) -> assertThat(n.get()).isEqualTo(1));
        assertThat(listeners.attempts("tx-batch-nokey:keyless"))
                .as("the keyless one never ran")
                .isZero();
    }

    @Test
    void whenTheBrokerDropsTheListenersConnectionMidRunTheContainerRecoversAndNothingIsLostOrDoubled()
            throws Exception {
        int total = 300;
        Thread producer = new Thread(() -> {
            for (int i = 0; i < total; i++) {
                send("resilient", RUN + "-r-" + i, "r" + i);
            }
        });
        producer.start();
        await().atMost(Duration.ofSeconds(30))
                .until(() -> listeners.effects("resilient").size() >= RESILIENT_DROPS_AT.get(0));
        boolean onBroker = TestRabbit.closeOnBroker(CONNECTION_NAME);
        org.slf4j.LoggerFactory.getLogger(RabbitListenerIdempotencyIntegrationTests.class)
                .info("Connection loss: {}", onBroker ? "closed by the broker (rabbitmqctl)" : "closed by the client");
        if (!onBroker) {
            // No rabbitmqctl here: close the listeners' connection from the client side instead.
            context.getBean(CachingConnectionFactory.class).resetConnection();
        }
        listeners.connectionDropped(0);
        await().atMost(Duration.ofSeconds(30))
                .until(() -> listeners.effects("resilient").size() >= RESILIENT_DROPS_AT.get(1));
        context.getBean(CachingConnectionFactory.class).resetConnection();
        listeners.connectionDropped(1);
        producer.join();

        await().atMost(Duration.ofSeconds(90))
                .until(() -> listeners.effects("resilient").size() == total);
        assertThat(listeners.effects("resilient"))
                .allSatisfy((key, n) -> assertThat(n.get()).isEqualTo(1));
        assertThat(context.getBean(RabbitAdmin.class)
                        .getQueueInfo(PREFIX + "resilient")
                        .getMessageCount())
                .isZero();
    }

    // ------------------------------------------------------------------ the application

    /** The listeners; effects are counted per key, threads per consumer. */
    static class Listeners {

        final BusyClaimLatches ledger;
        /** resilient: opened by the test once it has dropped the connection at RESILIENT_DROPS_AT's effects. */
        final List<CountDownLatch> resilientDropped = List.of(new CountDownLatch(1), new CountDownLatch(1));

        final Map<String, Map<String, AtomicInteger>> effects = new ConcurrentHashMap<>();
        final Map<String, Set<String>> threads = new ConcurrentHashMap<>();
        final Map<String, AtomicInteger> attempts = new ConcurrentHashMap<>();
        final List<String> styleHeader = new CopyOnWriteArrayList<>();
        final List<Integer> batchSizes = new CopyOnWriteArrayList<>();
        final AtomicInteger batchFailures = new AtomicInteger();

        Listeners(BusyClaimLatches ledger) {
            this.ledger = ledger;
        }

        /** The test has dropped the connection for the {@code drop}-th time: the held resilient runs go on. */
        void connectionDropped(int drop) {
            resilientDropped.get(drop).countDown();
        }

        Map<String, AtomicInteger> effects(String consumer) {
            return effects.computeIfAbsent(consumer, c -> new ConcurrentHashMap<>());
        }

        Set<String> threads(String consumer) {
            return threads.computeIfAbsent(consumer, c -> ConcurrentHashMap.newKeySet());
        }

        int attempts(String what) {
            AtomicInteger n = attempts.get(what);
            return n == null ? 0 : n.get();
        }

        void attempt(String what) {
            attempts.computeIfAbsent(what, w -> new AtomicInteger()).incrementAndGet();
        }

        void effect(String consumer) {
            String key = IdempotencyContext.current().key();
            effects(consumer).computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
            threads(consumer).add(Thread.currentThread().getName());
        }

        /** Payload only: the key comes from the delivery the container advice recorded. */
        @RabbitListener(id = "dup", queues = "${it.prefix}dup", concurrency = "4")
        @IdempotentHandler(mode = IdempotencyMode.LEASE)
        public void dup(String payload) throws InterruptedException {
            // Forces the interleaving the test is about: the run goes on once a copy of its key,
            // on another consumer, has been told BUSY by the ledger (or after 1 s, if every copy
            // went to this consumer, one after another).
            IdempotencyContext context = IdempotencyContext.current();
            ledger.awaitBusy(context.consumer(), context.key(), Duration.ofSeconds(1));
            effect("dup");
        }

        @RabbitListener(queues = "${it.prefix}compete-a", concurrency = "2")
        @IdempotentHandler(consumer = "compete", mode = IdempotencyMode.TRANSACTIONAL)
        public void competeA(Message message) {
            effect("compete");
            effect("compete-a");
        }

        @RabbitListener(queues = "${it.prefix}compete-b", concurrency = "2")
        @IdempotentHandler(consumer = "compete", mode = IdempotencyMode.TRANSACTIONAL)
        public void competeB(org.springframework.messaging.Message<String> message) {
            effect("compete");
            effect("compete-b");
        }

        @RabbitListener(id = "styles", queues = "${it.prefix}styles")
        @IdempotentHandler
        public void styles(String payload, @Header("outbox-id") String outboxId) {
            styleHeader.add(outboxId);
            effect("styles");
        }

        @RabbitListener(queues = "${it.prefix}poison", containerFactory = "retrying")
        @IdempotentHandler
        public void poison(String payload, @Header("outbox-id") String key) {
            attempt("poison:" + key);
            throw new IllegalStateException("poisoned payload " + key);
        }

        @RabbitListener(queues = "${it.prefix}nokey", containerFactory = "retrying")
        @IdempotentHandler
        public void noKey(String payload) {
            attempt("nokey");
        }

        @RabbitListener(queues = "${it.prefix}busy", containerFactory = "retrying")
        @IdempotentHandler(mode = IdempotencyMode.LEASE)
        public void busy(Message message) {
            attempt("busy:" + IdempotencyContext.current().key());
        }

        @RabbitListener(id = "batch", queues = "${it.prefix}batch", containerFactory = "batch", autoStartup = "false")
        @IdempotentHandler(mode = IdempotencyMode.LEASE)
        public void batch(List<Message> messages) {
            batchSizes.add(messages.size());
            for (int i = 0; i < messages.size(); i++) {
                String payload = new String(messages.get(i).getBody(), StandardCharsets.UTF_8);
                if (payload.equals("fail-once") && batchFailures.compareAndSet(0, 1)) {
                    throw new BatchFailedException(i, new IllegalStateException("the downstream call failed"));
                }
                String key = (String)
                        messages.get(i).getMessageProperties().getHeaders().get("outbox-id");
                effects("batch").computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
            }
        }

        @RabbitListener(queues = "${it.prefix}batch-nokey", containerFactory = "batch")
        @IdempotentHandler
        public void batchNoKey(List<String> payloads) {
            for (String payload : payloads) {
                effects("batch-nokey")
                        .computeIfAbsent(payload, k -> new AtomicInteger())
                        .incrementAndGet();
            }
        }

        // Accessors: the test sees the listener through its (class-based) proxy, whose fields are not the target's.
        List<String> styleHeaders() {
            return styleHeader;
        }

        List<Integer> batchSizes() {
            return batchSizes;
        }

        int batchFailures() {
            return batchFailures.get();
        }

        @RabbitListener(id = "manual", queues = "${it.prefix}manual", ackMode = "MANUAL", concurrency = "2")
        @IdempotentHandler
        public void manual(String payload, Channel channel, @Header(AmqpHeaders.DELIVERY_TAG) long tag)
                throws IOException {
            effect("manual");
            channel.basicAck(tag, false);
        }

        @RabbitListener(id = "manual-nack", queues = "${it.prefix}manual-nack", ackMode = "MANUAL")
        @IdempotentHandler(mode = IdempotencyMode.LEASE)
        public void manualNack(String payload, Channel channel, @Header(AmqpHeaders.DELIVERY_TAG) long tag)
                throws IOException {
            String key = IdempotencyContext.current().key();
            attempt("manual-nack:" + key);
            if (attempts("manual-nack:" + key) == 1) {
                switch (payload) {
                    case "nack" -> channel.basicNack(tag, false, true);
                    case "reject" -> channel.basicReject(tag, true);
                    default -> channel.basicNack(tag, false, false);
                }
                return;
            }
            effect("manual-nack");
            channel.basicAck(tag, false);
        }

        volatile @Nullable Runnable deferredAck;

        @RabbitListener(
                id = "tx-batch-nokey",
                queues = "${it.prefix}tx-batch-nokey",
                containerFactory = "txBatch",
                autoStartup = "false")
        @IdempotentHandler(mode = IdempotencyMode.LEASE)
        public void txBatchNoKey(List<Message> messages) {
            for (Message message : messages) {
                Object key = message.getMessageProperties().getHeaders().get("outbox-id");
                if (key == null) {
                    attempt("tx-batch-nokey:keyless");
                    continue;
                }
                effects("tx-batch-nokey")
                        .computeIfAbsent(key.toString(), k -> new AtomicInteger())
                        .incrementAndGet();
            }
        }

        @Nullable
        Runnable deferredAck() {
            return deferredAck;
        }

        @RabbitListener(
                id = "manual-defer",
                queues = "${it.prefix}manual-defer",
                ackMode = "MANUAL",
                containerFactory = "prefetch2")
        @IdempotentHandler(mode = IdempotencyMode.LEASE)
        public void manualDefer(String payload, Channel channel, @Header(AmqpHeaders.DELIVERY_TAG) long tag)
                throws IOException {
            attempt("manual-defer:" + IdempotencyContext.current().key());
            if (payload.equals("defer")) {
                deferredAck = () -> {
                    try {
                        channel.basicAck(tag, false);
                    } catch (IOException | RuntimeException ex) {
                        // the channel may be gone: nothing to settle then
                    }
                };
                return;
            }
            channel.basicAck(tag, false);
        }

        @RabbitListener(id = "resilient", queues = "${it.prefix}resilient", concurrency = "2")
        @IdempotentHandler(mode = IdempotencyMode.TRANSACTIONAL)
        public void resilient(String payload) throws InterruptedException {
            // Forces the interleaving the test is about: from the 50th (then the 150th) effect on,
            // the runs wait in their handlers until the test has dropped the connection, so the
            // drop lands while messages are mid-run (30 s at most, so a failing test ends).
            int done = effects("resilient").size();
            for (int i = 0; i < RESILIENT_DROPS_AT.size(); i++) {
                if (done >= RESILIENT_DROPS_AT.get(i)) {
                    resilientDropped.get(i).await(30, TimeUnit.SECONDS);
                }
            }
            effect("resilient");
        }
    }

    @Configuration(proxyBeanMethods = false)
    @EnableRabbit
    @Import({SumiRabbitTestBeans.class, RabbitBinderTestWiring.Broker.class})
    static class Config {

        @Bean
        Declarables queues() {
            DirectExchange dlx = new DirectExchange(PREFIX + "dlx", false, false);
            FanoutExchange compete = new FanoutExchange(PREFIX + "compete", false, false);
            List<org.springframework.amqp.core.Declarable> declarables = new ArrayList<>(List.of(dlx, compete));
            for (String name : QUEUES) {
                Queue queue = QueueBuilder.nonDurable(PREFIX + name)
                        .deadLetterExchange(dlx.getName())
                        .deadLetterRoutingKey(name)
                        .build();
                Queue dlq = QueueBuilder.nonDurable(PREFIX + name + ".dlq").build();
                declarables.add(queue);
                declarables.add(dlq);
                declarables.add(BindingBuilder.bind(dlq).to(dlx).with(name));
                // Where the retry's RepublishMessageRecoverer sends it: "error." + the original routing key.
                declarables.add(BindingBuilder.bind(dlq).to(dlx).with("error." + PREFIX + name));
                if (name.startsWith("compete-")) {
                    declarables.add(
                            new Binding(queue.getName(), Binding.DestinationType.QUEUE, compete.getName(), "", null));
                }
            }
            return new Declarables(declarables);
        }

        @Bean
        SimpleRabbitListenerContainerFactory rabbitListenerContainerFactory(ConnectionFactory connectionFactory) {
            SimpleRabbitListenerContainerFactory factory = new SimpleRabbitListenerContainerFactory();
            factory.setConnectionFactory(connectionFactory);
            factory.setPrefetchCount(10);
            factory.setAcknowledgeMode(AcknowledgeMode.AUTO);
            factory.setRecoveryInterval(500L);
            return factory;
        }

        @Bean
        SimpleRabbitListenerContainerFactory prefetch2(ConnectionFactory connectionFactory) {
            SimpleRabbitListenerContainerFactory factory = new SimpleRabbitListenerContainerFactory();
            factory.setConnectionFactory(connectionFactory);
            factory.setPrefetchCount(2);
            factory.setAcknowledgeMode(AcknowledgeMode.MANUAL);
            return factory;
        }

        /** Three attempts, then the message is republished to the dead-letter exchange with the exception's headers. */
        @Bean
        SimpleRabbitListenerContainerFactory retrying(ConnectionFactory connectionFactory) {
            SimpleRabbitListenerContainerFactory factory = rabbitListenerContainerFactory(connectionFactory);
            factory.setAdviceChain(RetryInterceptorBuilder.stateless()
                    .maxRetries(2)
                    .backOffOptions(50, 1.0, 50)
                    .recoverer(withStackTrace(
                            new RepublishMessageRecoverer(new RabbitTemplate(connectionFactory), PREFIX + "dlx")))
                    .build());
            return factory;
        }

        /**
         * Spring AMQP 4.1 (Boot 4.1) leaves {@code x-exception-stacktrace} out unless
         * {@code includeStackTrace(true)}, a method 4.0 does not have (it always adds the header):
         * called where it exists, so the test asserts the same headers on both lines.
         */
        private static RepublishMessageRecoverer withStackTrace(RepublishMessageRecoverer recoverer) {
            java.lang.reflect.Method include =
                    ReflectionUtils.findMethod(RepublishMessageRecoverer.class, "includeStackTrace", boolean.class);
            if (include != null) {
                ReflectionUtils.invokeMethod(include, recoverer, true);
            }
            return recoverer;
        }

        @Bean
        SimpleRabbitListenerContainerFactory batch(ConnectionFactory connectionFactory) {
            SimpleRabbitListenerContainerFactory factory = rabbitListenerContainerFactory(connectionFactory);
            factory.setBatchListener(true);
            factory.setConsumerBatchEnabled(true);
            factory.setBatchSize(10);
            factory.setBatchReceiveTimeout(1000L);
            factory.setPrefetchCount(20);
            return factory;
        }

        @Bean
        SimpleRabbitListenerContainerFactory txBatch(ConnectionFactory connectionFactory) {
            SimpleRabbitListenerContainerFactory factory = batch(connectionFactory);
            factory.setChannelTransacted(true);
            return factory;
        }

        @Bean
        Listeners listeners(ProcessedMessageStore store) {
            return new Listeners((BusyClaimLatches) store);
        }
    }
}
