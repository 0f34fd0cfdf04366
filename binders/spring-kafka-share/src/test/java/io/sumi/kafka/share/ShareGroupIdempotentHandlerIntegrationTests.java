package io.sumi.kafka.share;

import static io.sumi.test.SumiAssertions.assertThatSumi;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import brave.handler.MutableSpan;
import brave.handler.SpanHandler;
import brave.propagation.TraceContext;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.search.Search;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.tracing.Span;
import io.micrometer.tracing.Tracer;
import io.sumi.budget.Budget;
import io.sumi.budget.BudgetRegistry;
import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentHandler;
import io.sumi.consumer.binder.BusyPolicy;
import io.sumi.kafka.internal.ListenerDelegates;
import io.sumi.test.SumiTest;
import io.sumi.testing.TestDatabase;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.SmartLifecycle;
import org.springframework.context.annotation.Bean;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.config.ShareKafkaListenerContainerFactory;
import org.springframework.kafka.config.TopicBuilder;
import org.springframework.kafka.core.DefaultShareConsumerFactory;
import org.springframework.kafka.core.KafkaAdmin;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.listener.GenericMessageListener;
import org.springframework.kafka.listener.ShareKafkaMessageListenerContainer;
import org.springframework.kafka.test.context.EmbeddedKafka;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * {@code @IdempotentHandler} on share-group listeners against a real broker with share groups on
 * (spring-kafka-test's KRaft broker, Kafka 4.2): records are acquired one at a time
 * ({@code max.poll.records=1}), a lock lasts 2 s and a record is archived after its second
 * delivery, so that what a delivery limit does shows within seconds. Two consumers per container;
 * the ledger is the local PostgreSQL.
 */
@SpringBootTest(
        classes = ShareGroupIdempotentHandlerIntegrationTests.App.class,
        properties = {
            "spring.kafka.bootstrap-servers=${spring.embedded.kafka.brokers}",
            "sumi.outbox.dispatcher.enabled=false",
            "spring.flyway.locations=classpath:db/sumi/{vendor}",
            "sumi.kafka.share.busy-retry-interval=200ms",
            "sumi.kafka.share.busy-max-wait=1s",
            "sumi.budgets.share-llm.limit=1000",
            "sumi.budgets.share-llm.window=1h",
            "sumi.budgets.share-llm.cost-per-call=1",
            "management.tracing.sampling.probability=1.0"
        })
@EmbeddedKafka(
        partitions = 2,
        topics = {"share-mail", "share-budget", "share-recovered"},
        brokerProperties = {
            "share.coordinator.state.topic.replication.factor=1",
            "share.coordinator.state.topic.min.isr=1",
            "group.share.min.record.lock.duration.ms=1000",
            "group.share.record.lock.duration.ms=2000",
            "group.share.delivery.count.limit=2"
        })
class ShareGroupIdempotentHandlerIntegrationTests {

    static final String DELIVERY_LIMIT = "2";

    /** The ledger outlives a run: each run's keys are its own. */
    static final String RUN = java.util.UUID.randomUUID().toString().substring(0, 8) + "-";

    @DynamicPropertySource
    static void database(DynamicPropertyRegistry registry) {
        TestDatabase.POSTGRESQL.registerDataSource("sumi_share_test", registry::add);
    }

    @Autowired
    KafkaTemplate<String, String> template;

    @Autowired
    Effects effects;

    @Autowired
    MeterRegistry meters;

    @Autowired
    KafkaListenerEndpointRegistry registry;

    @Autowired
    BudgetRegistry budgets;

    @Autowired
    RecordingRecoverer recovered;

    @Autowired
    SumiTest sumi;

    @Autowired
    ConfigurableApplicationContext context;

    @Autowired
    Spans spans;

    static ProducerRecord<String, String> record(String topic, String key, String payload) {
        ProducerRecord<String, String> record = new ProducerRecord<>(topic, key, payload);
        record.headers().add("outbox-id", key.getBytes(StandardCharsets.UTF_8));
        return record;
    }

    private double acknowledgements(String listener, String type) {
        return Search.in(meters)
                .name("sumi.kafka.share.acknowledgements")
                .tag("listener", listener)
                .tag("type", type)
                .counters()
                .stream()
                .mapToDouble(counter -> counter.count())
                .sum();
    }

    /**
     * The test kit on a share group: three copies sent at once reach both consumers of the group
     * (one partition), the copy that meets the running one is held (renewed), and {@code andAwait()}
     * returns once every copy is accepted, with the handler run once.
     */
    @Test
    void theTestKitSendsCopiesToAShareGroupAndAwaitsEveryCopysAcceptance() {
        String key = RUN + "kit-1";
        sumi.kafka().send("share-kit", key, "ok").times(3).concurrently().andAwait();

        assertThatSumi()
                .consumer("share-kit")
                .isGuardedBySumi()
                .processedOnce(key)
                .hasNoClaimInProgress();
        assertThat(effects.runs(key)).containsExactly(Map.entry(key, 1));
    }

    /**
     * A context stopped and started again (a test that restarts its listeners, an application that
     * stops and starts its context): Sumi's configurer runs again and finds its listener under the
     * test kit's watcher; it neither wraps it twice nor refuses the container, and a key sent three
     * times at once still runs once.
     */
    @Test
    void aContextStoppedAndStartedAgainKeepsOneGuardUnderTheKitsWatcher() {
        ShareKafkaMessageListenerContainer<?, ?> kit =
                (ShareKafkaMessageListenerContainer<?, ?>) registry.getListenerContainer("share-kit");
        assertThat(kit).isNotNull();
        Object watched = kit.getContainerProperties().getMessageListener();
        assertThat(watched).isNotNull();
        assertThat(java.lang.reflect.Proxy.isProxyClass(watched.getClass()))
                .as("the kit's watcher wraps Sumi's listener")
                .isTrue();
        assertThat(sumiListeners(kit)).hasSize(1);

        context.stop();
        context.start();
        // After a refresh the registry starts every container, those that wait for a test too.
        ShareKafkaMessageListenerContainer<?, ?> control =
                (ShareKafkaMessageListenerContainer<?, ?>) registry.getListenerContainer("share-busy-control");
        assertThat(control).isNotNull();
        control.stop();

        assertThat(kit.isRunning()).isTrue();
        assertThat(kit.getContainerProperties().getMessageListener()).isSameAs(watched);
        assertThat(sumiListeners(kit)).as("one guard, not two").hasSize(1);
        String key = RUN + "kit-restarted-1";
        sumi.kafka().send("share-kit", key, "ok").times(3).concurrently().andAwait();
        assertThatSumi().consumer("share-kit").processedOnce(key).hasNoClaimInProgress();
        assertThat(effects.runs(key)).containsExactly(Map.entry(key, 1));
    }

    /**
     * With observation enabled on the container factory, a share record's {@code traceparent} is
     * continued: the handler runs in the producer's trace, under a consumer span, with Sumi's span
     * ({@code sumi <consumer>}) a child of it. A record without one starts a trace of its own.
     * Negative control: the same factory's listener without Sumi is in no trace of the producer's,
     * since Spring Kafka's share container opens no observation (were it to open one, this module
     * would open a second).
     */
    @Test
    void aShareRecordsTraceparentIsContinuedAndSumisSpanIsAChildOfTheConsumerSpan() {
        String traceId = java.util.UUID.randomUUID().toString().replace("-", "");
        String parentSpanId = traceId.substring(0, 16);
        String traceparent = "00-" + traceId + "-" + parentSpanId + "-01";
        String traced = RUN + "traced-1";
        String untraced = RUN + "untraced-1";
        String plain = RUN + "traced-plain-1";
        ProducerRecord<String, String> tracedRecord = record("share-traced", traced, "ok");
        tracedRecord.headers().add("traceparent", traceparent.getBytes(StandardCharsets.UTF_8));
        ProducerRecord<String, String> plainRecord = record("share-traced-plain", plain, "ok");
        plainRecord.headers().add("traceparent", traceparent.getBytes(StandardCharsets.UTF_8));
        template.send(tracedRecord);
        template.send(record("share-traced", untraced, "ok"));
        template.send(plainRecord);

        await().atMost(Duration.ofSeconds(30))
                .until(() -> effects.traceIds.keySet().containsAll(List.of(traced, untraced, plain)));
        assertThat(effects.traceIds.get(traced))
                .as("the handler ran in the producer's trace")
                .isEqualTo(traceId);
        assertThat(effects.traceIds.get(untraced))
                .as("a record without traceparent starts a trace of its own")
                .isNotEqualTo(traceId)
                .isNotEqualTo("none");
        assertThat(effects.traceIds.get(plain))
                .as("negative control: Spring Kafka's share container continues no trace")
                .isNotEqualTo(traceId);

        await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
            List<MutableSpan> inTrace = spans.inTrace(traceId);
            MutableSpan consumer = inTrace.stream()
                    .filter(span -> span.kind() == brave.Span.Kind.CONSUMER)
                    .findFirst()
                    .orElseThrow(() -> new AssertionError("no consumer span in " + inTrace));
            assertThat(consumer.parentId())
                    .as("the consumer span's parent is the producer's")
                    .isEqualTo(parentSpanId);
            assertThat(inTrace).anySatisfy(handling -> {
                assertThat(handling.name()).isEqualTo("sumi share-traced");
                assertThat(handling.parentId())
                        .as("Sumi's span is the consumer span's child")
                        .isEqualTo(consumer.id());
                assertThat(handling.tags()).containsEntry("outcome", "processed");
            });
        });
    }

    /** The kit's negative control: without {@code @IdempotentHandler} it sees each copy run the handler. */
    @Test
    void withoutSumiTheTestKitSeesEveryCopyOfAShareGroupRecordRunTheHandler() {
        String key = RUN + "kit-plain-1";
        sumi.kafka().send("share-kit-plain", key, "ok").times(3).andAwait();

        assertThatSumi().consumer("share-kit-plain").ranHandler(key, 3);
        assertThatThrownBy(() -> assertThatSumi().consumer("share-kit-plain").processedOnce(key))
                .isInstanceOf(AssertionError.class)
                .hasMessageContaining("its handler ran 3 times");
        assertThat(effects.runs(key)).containsExactly(Map.entry(key, 3));
    }

    @Test
    void copiesOfOneKeyOnTwoConsumersRunItsHandlerOnceAndAreAllAccepted() throws Exception {
        double accepted = acknowledgements("share-mail", "accept");
        double released = acknowledgements("share-mail", "release");
        double rejected = acknowledgements("share-mail", "reject");
        List<ProducerRecord<String, String>> records = new ArrayList<>();
        for (int i = 0; i < 100; i++) {
            records.add(record("share-mail", RUN + "mail-" + i, "ok"));
        }
        for (int i = 0; i < 30; i++) { // 30 % duplicates, sent again behind the others
            records.add(record("share-mail", RUN + "mail-" + (i * 3), "ok"));
        }
        Collections.shuffle(records, new java.util.Random(7));
        for (ProducerRecord<String, String> record : records) {
            template.send(record);
        }
        template.flush();

        await().atMost(Duration.ofSeconds(60))
                .untilAsserted(() -> assertThat(acknowledgements("share-mail", "accept") - accepted)
                        .isEqualTo(130));
        assertThat(effects.runs(RUN + "mail-"))
                .hasSize(100)
                .allSatisfy((key, runs) -> assertThat(runs).as(key).isOne());
        assertThat(acknowledgements("share-mail", "release") - released).isZero();
        assertThat(acknowledgements("share-mail", "reject") - rejected).isZero();
        assertThat(effects.okDeliveries(RUN + "mail-0"))
                .as("delivery counts seen by a handler")
                .isNotEmpty();
        assertThat(effects.contextMismatches)
                .as("ShareDelivery.deliveryCount() is the record's")
                .isEmpty();
    }

    @Test
    void aFailedHandlersRecordIsReleasedAndRunsAgain() {
        double released = acknowledgements("share-mail", "release");
        template.send(record("share-mail", RUN + "fail-once", "fail-once"));

        await().atMost(Duration.ofSeconds(30))
                .untilAsserted(() -> assertThat(effects.runs(RUN + "fail-once")).containsEntry(RUN + "fail-once", 1));
        assertThat(effects.attempts(RUN + "fail-once")).isEqualTo(2);
        assertThat(acknowledgements("share-mail", "release") - released).isOne();
    }

    @Test
    void aRecordWithoutAKeyIsRejectedOnceWithoutRunningTheHandler() throws Exception {
        double rejected = acknowledgements("share-mail", "reject");
        template.send(new ProducerRecord<>("share-mail", RUN + "no-key", "no key header"));

        await().atMost(Duration.ofSeconds(30))
                .untilAsserted(() -> assertThat(acknowledgements("share-mail", "reject") - rejected)
                        .isOne());
        // Archived: not delivered again (two lock periods later it is still one rejection).
        Thread.sleep(4_000);
        assertThat(acknowledgements("share-mail", "reject") - rejected).isOne();
        assertThat(effects.attempts(RUN + "no-key")).isZero();
    }

    /**
     * With a recoverer of the application's on the factory (its dead-letter path), a record whose
     * key can never run and a failed handler's record both go to it, not to Sumi's REJECT or
     * RELEASE: here it publishes nothing and answers REJECT, once each, and the handler of the
     * keyless record never ran.
     */
    @Test
    void withTheApplicationsRecovererBadKeysAndFailuresGoToIt() throws Exception {
        template.send(new ProducerRecord<>("share-recovered", RUN + "recovered-no-key", "no key header"));
        template.send(record("share-recovered", RUN + "recovered-fail", "fail-always"));

        await().atMost(Duration.ofSeconds(30)).until(() -> recovered.failures().size() >= 2);
        Thread.sleep(4_000); // two lock periods: rejected by the recoverer, not delivered again
        assertThat(recovered.failures())
                .hasSize(2)
                .anySatisfy(failure ->
                        assertThat(failure).startsWith(RUN + "recovered-fail: ").contains("always fails"))
                .anySatisfy(failure -> assertThat(failure)
                        .startsWith(RUN + "recovered-no-key: ")
                        .contains("MissingIdempotencyKeyException"));
        assertThat(effects.attempts(RUN + "recovered-no-key"))
                .as("runs of the keyless record")
                .isZero();
        assertThat(effects.attempts(RUN + "recovered-fail"))
                .as("runs of the failing handler")
                .isOne();
        assertThat(acknowledgements("share-recovered", "reject"))
                .as("Sumi's own rejections")
                .isZero();
        assertThat(acknowledgements("share-recovered", "release"))
                .as("Sumi's releases")
                .isZero();
    }

    /**
     * A budget forced open while 20 records arrive on consumers that acquire up to 20 records a
     * poll: every record is held, renewed with its poll, for three lock periods, then runs once the
     * budget closes. Held records wait one retry interval per poll, together, so no lock lapses:
     * each record is delivered (and accepted) once. Checked by hand against the version that waited
     * one interval per held record before renewing (200 ms each, added up past the 2 s lock): the
     * locks lapsed while the records were held, and 28 deliveries of the 20 records were accepted
     * (the ledger kept the effects at one each; with the default delivery limit of 5 a longer
     * opening archives them).
     */
    @Test
    void anOpenBudgetHoldsWholePollsRenewedAndTheyRunOnceItCloses() throws Exception {
        Budget budget = budgets.budget("share-llm");
        double renewed = acknowledgements("share-budget", "renew");
        budget.forceOpen();
        try {
            for (int i = 0; i < 20; i++) {
                template.send(record("share-budget", RUN + "budget-" + i, "ok"));
            }
            template.flush();
            await().atMost(Duration.ofSeconds(30))
                    .until(() -> acknowledgements("share-budget", "renew") - renewed >= 20);
            Thread.sleep(6_000); // three lock periods
            assertThat(effects.runs(RUN + "budget-"))
                    .as("nothing runs while the budget is open")
                    .isEmpty();
            assertThat(acknowledgements("share-budget", "release"))
                    .as("releases")
                    .isZero();
            assertThat(acknowledgements("share-budget", "reject"))
                    .as("rejections")
                    .isZero();
        } finally {
            budget.forceClosed();
        }
        await().atMost(Duration.ofSeconds(30))
                .untilAsserted(() -> assertThat(effects.runs(RUN + "budget-")).hasSize(20));
        assertThat(effects.runs(RUN + "budget-"))
                .allSatisfy((key, runs) -> assertThat(runs).as(key).isOne());
        assertThat(acknowledgements("share-budget", "accept"))
                .as("deliveries: no lock lapsed")
                .isEqualTo(20);
        assertThat(acknowledgements("share-budget", "release")).as("releases").isZero();
    }

    /**
     * A handler that outlives its record's acquisition lock (5 s against 2 s), its lease (1 s)
     * renewed meanwhile: the lock cannot be renewed while the handler runs, so the record goes to
     * the other consumer (delivery 2), which meets the live claim as BUSY and holds it, renewed,
     * until the first run completes and it is a duplicate. One run, nothing released.
     */
    @Test
    void aRecordWhoseLockLapsesWhileItsHandlerRunsRunsOnceWhileTheLeaseIsRenewed() {
        String key = RUN + "long";
        template.send(record("share-long", key, "slow-first"));

        // Both deliveries accepted: the first after its run (the broker refuses it: its lock is
        // gone), the held copy as a duplicate once that run completed.
        await().atMost(Duration.ofSeconds(30))
                .untilAsserted(() ->
                        assertThat(acknowledgements("share-long", "accept")).isEqualTo(2));
        assertThat(effects.attempts(key)).as("handler runs").isOne();
        assertThat(effects.runs(key)).containsEntry(key, 1);
        assertThat(acknowledgements("share-long", "renew"))
                .as("the redelivered copy was held while the first run went on")
                .isGreaterThanOrEqualTo(1);
        assertThat(acknowledgements("share-long", "release")).as("releases").isZero();
        assertThat(effects.okDeliveries(key)).as("the one run was delivery 1").containsExactly(1);
    }

    /**
     * The same handler past its max run time (1 s): its lease renewal stops, the lease lapses, and
     * the copy the lapsed lock sent to the other consumer takes the claim over and runs the handler
     * again while the first run still goes on: the documented repeat of lease mode past max-run
     * (both the lease and the lock have lapsed), with the same key.
     */
    @Test
    void pastMaxRunTheLeaseAndTheLockLapseAndTheOtherConsumerRunsTheKeyAgain() {
        String key = RUN + "overrun";
        template.send(record("share-overrun", key, "slow-first"));

        await().atMost(Duration.ofSeconds(30))
                .untilAsserted(() -> assertThat(effects.attempts(key)).isEqualTo(2));
        await().atMost(Duration.ofSeconds(30))
                .untilAsserted(() -> assertThat(effects.runs(key)).containsEntry(key, 2));
        assertThat(effects.okDeliveries(key)).as("deliveries of the two runs").containsExactlyInAnyOrder(1, 2);
    }

    /**
     * Copy 1 of a key hangs in its handler on one consumer, then fails; copy 2 meets BUSY on the
     * other consumer meanwhile, for longer than the delivery limit would allow if each meeting
     * released it. Held (renewed, uncounted), copy 2 runs once copy 1's claim is released.
     * Negative control, same shape on its own topic and group: a listener that releases a busy
     * record at once loses the key (copy 2 archived at the limit, copy 1 always fails).
     */
    @Test
    void aBusyKeyIsHeldPastTheDeliveryLimitAndRunsOnceItsHolderFails() throws Exception {
        assertBusyKey("share-busy", true);
    }

    @Test
    void negativeControlReleasingABusyRecordEachTimeLosesTheKey() throws Exception {
        ShareKafkaMessageListenerContainer<?, ?> control =
                (ShareKafkaMessageListenerContainer<?, ?>) registry.getListenerContainer("share-busy-control");
        assertThat(control).isNotNull();
        // Sumi's listener, under the test kit's watcher: the control wraps the adapter Sumi wraps.
        List<SumiShareListener<?, ?>> sumi = sumiListeners(control);
        assertThat(sumi).hasSize(1);
        control.getContainerProperties()
                .setMessageListener(new SumiShareListener<>(
                        (GenericMessageListener<?>) sumi.get(0).getDelegate(),
                        "share-busy-control",
                        BusyPolicy.of(Duration.ofMillis(200), Duration.ofSeconds(1)),
                        false,
                        control::isRunning,
                        new ShareMetrics(meters),
                        ShareRecordObservation.NONE,
                        false));
        control.start();
        try {
            assertBusyKey("share-busy-control", false);
        } finally {
            control.stop();
        }
    }

    /** Sumi's listeners in the chain of delegates from {@code container}'s listener down. */
    static List<SumiShareListener<?, ?>> sumiListeners(ShareKafkaMessageListenerContainer<?, ?> container) {
        List<SumiShareListener<?, ?>> found = new ArrayList<>();
        for (Object listener :
                ListenerDelegates.chain(container.getContainerProperties().getMessageListener())) {
            if (listener instanceof SumiShareListener<?, ?> sumi) {
                found.add(sumi);
            }
        }
        return found;
    }

    private void assertBusyKey(String topic, boolean held) throws Exception {
        String key = RUN + topic + "-key";
        CountDownLatch hanging = effects.hang(key);
        template.send(record(topic, key, "hang-then-fail"));
        assertThat(effects.awaitHanging(key)).as("copy 1 hangs in its handler").isTrue();
        template.send(record(topic, key, "ok"));

        if (held) {
            // Two lock periods of 2 s, meetings every 200 ms: released at each meeting, copy 2 would
            // have been archived at its second delivery long before.
            Thread.sleep(4_000);
            assertThat(acknowledgements(topic, "renew")).as("renewals").isGreaterThanOrEqualTo(2);
            assertThat(acknowledgements(topic, "release")).as("releases").isZero();
        } else {
            // Copy 2 released at its two deliveries, copy 1 at its second (its first lock ran out
            // while it hung): all archived.
            await().atMost(Duration.ofSeconds(30)).until(() -> acknowledgements(topic, "release") >= 3);
            Thread.sleep(3_000);
        }
        hanging.countDown(); // copy 1 fails: its claim is released

        if (held) {
            await().atMost(Duration.ofSeconds(30))
                    .untilAsserted(() -> assertThat(effects.runs(key)).containsEntry(key, 1));
            // Within the limit: held, copy 2 was never released. (When its consumer acquires the
            // other copy between two renewals, the renewed lock can lapse once: delivery 2.)
            assertThat(effects.okDeliveries(key))
                    .as("copy 2's delivery count")
                    .singleElement()
                    .satisfies(deliveries -> assertThat(deliveries).isBetween(1, Integer.parseInt(DELIVERY_LIMIT)));
        } else {
            Thread.sleep(4_000); // copy 1's redelivery fails too (archived); copy 2 stays archived: two lock periods
            assertThat(effects.runs(key)).as("the key's effect").isEmpty();
        }
    }

    /** The application's recoverer: records each failure it is asked about ("key: exception") and rejects. */
    static class RecordingRecoverer implements org.springframework.kafka.listener.ShareConsumerRecordRecoverer {

        private final List<String> failures = Collections.synchronizedList(new ArrayList<>());

        @Override
        public org.apache.kafka.clients.consumer.AcknowledgeType recover(ConsumerRecord<?, ?> record, Exception ex) {
            StringBuilder chain = new StringBuilder();
            for (Throwable cause = ex; cause != null; cause = cause.getCause()) {
                chain.append(cause.getClass().getSimpleName())
                        .append(' ')
                        .append(cause.getMessage())
                        .append(" | ");
            }
            failures.add(record.key() + ": " + chain);
            return org.apache.kafka.clients.consumer.AcknowledgeType.REJECT;
        }

        List<String> failures() {
            return List.copyOf(failures);
        }
    }

    /** What the listeners did, per key. */
    static class Effects {

        private final Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
        private final Map<String, AtomicInteger> attempts = new ConcurrentHashMap<>();
        private final Map<String, CountDownLatch> hangs = new ConcurrentHashMap<>();
        private final Map<String, CountDownLatch> hanging = new ConcurrentHashMap<>();
        private final Map<String, List<Integer>> okDeliveries = new ConcurrentHashMap<>();
        /** The trace each traced listener's handler ran in, by key. */
        final Map<String, String> traceIds = new ConcurrentHashMap<>();
        /** Keys whose handler saw another delivery count through ShareDelivery than on its record. */
        final List<String> contextMismatches = Collections.synchronizedList(new ArrayList<>());

        void on(ConsumerRecord<String, String> record) throws InterruptedException {
            String key = record.key();
            int attempt =
                    attempts.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
            switch (record.value()) {
                case "fail-once" -> {
                    if (attempt == 1) {
                        throw new IllegalStateException("the first attempt fails");
                    }
                }
                case "fail-always" -> throw new IllegalStateException(key + " always fails");
                case "slow-first" -> {
                    if (attempt == 1) {
                        Thread.sleep(5_000); // two and a half lock periods
                    }
                    delivered(record);
                }
                case "hang-then-fail" -> {
                    CountDownLatch release = hangs.remove(key); // only the first attempt hangs
                    if (release != null) {
                        hanging.computeIfAbsent(key, k -> new CountDownLatch(1)).countDown();
                        release.await(60, TimeUnit.SECONDS);
                    }
                    throw new IllegalStateException("copy 1 always fails");
                }
                default -> delivered(record);
            }
            runs.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
        }

        private void delivered(ConsumerRecord<String, String> record) {
            int counted = record.deliveryCount().map(Short::intValue).orElse(0);
            if (io.sumi.kafka.ShareDelivery.deliveryCount().orElse(-1) != counted) {
                contextMismatches.add(record.key());
            }
            okDeliveries
                    .computeIfAbsent(record.key(), k -> Collections.synchronizedList(new ArrayList<>()))
                    .add(record.deliveryCount().map(Short::intValue).orElse(0));
        }

        CountDownLatch hang(String key) {
            CountDownLatch latch = new CountDownLatch(1);
            hangs.put(key, latch);
            return latch;
        }

        boolean awaitHanging(String key) throws InterruptedException {
            return hanging.computeIfAbsent(key, k -> new CountDownLatch(1)).await(30, TimeUnit.SECONDS);
        }

        Map<String, Integer> runs(String prefix) {
            Map<String, Integer> found = new java.util.TreeMap<>();
            runs.forEach((key, count) -> {
                if (key.startsWith(prefix)) {
                    found.put(key, count.get());
                }
            });
            return found;
        }

        int attempts(String key) {
            AtomicInteger count = attempts.get(key);
            return count == null ? 0 : count.get();
        }

        List<Integer> okDeliveries(String key) {
            return okDeliveries.getOrDefault(key, List.of());
        }
    }

    /** Brave's finished spans, kept in memory. */
    static class Spans extends SpanHandler {

        final List<MutableSpan> finished = new java.util.concurrent.CopyOnWriteArrayList<>();

        @Override
        public boolean end(TraceContext context, MutableSpan span, SpanHandler.Cause cause) {
            finished.add(span);
            return true;
        }

        List<MutableSpan> inTrace(String traceId) {
            return finished.stream()
                    .filter(span -> span.traceId().equals(traceId))
                    .toList();
        }
    }

    /**
     * share-traced without Sumi, the tracing test's negative control: a bean with no
     * {@code @IdempotentHandler} method, whose container Sumi leaves alone (Sumi wraps the
     * containers of a bean that has one, all of them).
     */
    static class UnguardedListeners {

        private final Listeners listeners;

        UnguardedListeners(Listeners listeners) {
            this.listeners = listeners;
        }

        @KafkaListener(
                id = "share-traced-plain",
                topics = "share-traced-plain",
                groupId = "share-traced-plain",
                containerFactory = "shareObservedFactory")
        public void tracedWithoutSumi(ConsumerRecord<String, String> record) {
            listeners.traceOf(record); // only the trace: without Sumi there is no ShareDelivery
        }
    }

    static class Listeners {

        private final Effects effects;
        private final Tracer tracer;

        Listeners(Effects effects, Tracer tracer) {
            this.effects = effects;
            this.tracer = tracer;
        }

        @KafkaListener(
                id = "share-traced",
                topics = "share-traced",
                groupId = "share-traced",
                containerFactory = "shareObservedFactory")
        @IdempotentHandler(consumer = "share-traced")
        public void traced(ConsumerRecord<String, String> record) throws InterruptedException {
            traceOf(record);
            effects.on(record);
        }

        void traceOf(ConsumerRecord<String, String> record) {
            Span current = tracer.currentSpan();
            effects.traceIds.put(
                    record.key(), current == null ? "none" : current.context().traceId());
        }

        @KafkaListener(
                id = "share-mail",
                topics = "share-mail",
                groupId = "share-mail",
                containerFactory = "shareFactory")
        @IdempotentHandler(consumer = "share-mail")
        public void mail(ConsumerRecord<String, String> record) throws InterruptedException {
            effects.on(record);
        }

        @KafkaListener(
                id = "share-busy",
                topics = "share-busy",
                groupId = "share-busy",
                containerFactory = "shareFactory")
        @IdempotentHandler(consumer = "share-busy", mode = IdempotencyMode.LEASE, lease = "60s")
        public void busy(ConsumerRecord<String, String> record) throws InterruptedException {
            effects.on(record);
        }

        @KafkaListener(
                id = "share-recovered",
                topics = "share-recovered",
                groupId = "share-recovered",
                containerFactory = "shareRecoveringFactory")
        @IdempotentHandler(consumer = "share-recovered")
        public void recovered(ConsumerRecord<String, String> record) throws InterruptedException {
            effects.on(record);
        }

        @KafkaListener(
                id = "share-long",
                topics = "share-long",
                groupId = "share-long",
                containerFactory = "shareFactory")
        @IdempotentHandler(consumer = "share-long", mode = IdempotencyMode.LEASE, lease = "1s", maxRun = "1m")
        public void longRunning(ConsumerRecord<String, String> record) throws InterruptedException {
            effects.on(record);
        }

        @KafkaListener(
                id = "share-overrun",
                topics = "share-overrun",
                groupId = "share-overrun",
                containerFactory = "shareFactory")
        @IdempotentHandler(consumer = "share-overrun", mode = IdempotencyMode.LEASE, lease = "1s", maxRun = "1s")
        public void overrunning(ConsumerRecord<String, String> record) throws InterruptedException {
            effects.on(record);
        }

        @KafkaListener(
                id = "share-budget",
                topics = "share-budget",
                groupId = "share-budget",
                containerFactory = "sharePollFactory")
        @IdempotentHandler(consumer = "share-budget", budget = "share-llm")
        public void budgeted(ConsumerRecord<String, String> record) throws InterruptedException {
            effects.on(record);
        }

        @KafkaListener(
                id = "share-busy-control",
                topics = "share-busy-control",
                groupId = "share-busy-control",
                containerFactory = "shareFactory",
                autoStartup = "false")
        @IdempotentHandler(consumer = "share-busy-control", mode = IdempotencyMode.LEASE, lease = "60s")
        public void busyControl(ConsumerRecord<String, String> record) throws InterruptedException {
            effects.on(record);
        }

        @KafkaListener(id = "share-kit", topics = "share-kit", groupId = "share-kit", containerFactory = "shareFactory")
        @IdempotentHandler(consumer = "share-kit")
        public void kit(ConsumerRecord<String, String> record) throws InterruptedException {
            effects.on(record);
        }

        /** The same listener without Sumi: the test kit's negative control. */
        @KafkaListener(
                id = "share-kit-plain",
                topics = "share-kit-plain",
                groupId = "share-kit-plain",
                containerFactory = "shareFactory")
        public void kitWithoutSumi(ConsumerRecord<String, String> record) throws InterruptedException {
            effects.on(record);
        }
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class App {

        @Bean
        Effects effects() {
            return new Effects();
        }

        @Bean
        Listeners listeners(Effects effects, Tracer tracer) {
            return new Listeners(effects, tracer);
        }

        @Bean
        UnguardedListeners unguardedListeners(Listeners listeners) {
            return new UnguardedListeners(listeners);
        }

        @Bean
        Spans spans() {
            return new Spans();
        }

        /**
         * One partition: a share group hands a partition to every member only when it has more
         * members than partitions, and both copies of a key are on one partition.
         */
        @Bean
        NewTopic shareBusy() {
            return TopicBuilder.name("share-busy").partitions(1).replicas(1).build();
        }

        @Bean
        NewTopic shareLong() {
            return TopicBuilder.name("share-long").partitions(1).replicas(1).build();
        }

        @Bean
        NewTopic shareOverrun() {
            return TopicBuilder.name("share-overrun").partitions(1).replicas(1).build();
        }

        @Bean
        NewTopic shareBusyControl() {
            return TopicBuilder.name("share-busy-control")
                    .partitions(1)
                    .replicas(1)
                    .build();
        }

        @Bean
        NewTopic shareKit() {
            return TopicBuilder.name("share-kit").partitions(1).replicas(1).build();
        }

        @Bean
        NewTopic shareKitPlain() {
            return TopicBuilder.name("share-kit-plain")
                    .partitions(1)
                    .replicas(1)
                    .build();
        }

        @Bean
        NewTopic shareTraced() {
            return TopicBuilder.name("share-traced").partitions(1).replicas(1).build();
        }

        @Bean
        NewTopic shareTracedPlain() {
            return TopicBuilder.name("share-traced-plain")
                    .partitions(1)
                    .replicas(1)
                    .build();
        }

        @Bean
        MeterRegistry meterRegistry() {
            return new SimpleMeterRegistry();
        }

        @Bean
        ShareKafkaListenerContainerFactory<String, String> shareFactory(
                @Value("${spring.embedded.kafka.brokers}") String brokers) {
            return factory(
                    brokers, Map.of(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 1, "share.acquire.mode", "record_limit"));
        }

        @Bean
        RecordingRecoverer recoverer() {
            return new RecordingRecoverer();
        }

        /** As shareFactory, with the application's recoverer (a dead-letter path). */
        @Bean
        ShareKafkaListenerContainerFactory<String, String> shareRecoveringFactory(
                @Value("${spring.embedded.kafka.brokers}") String brokers, RecordingRecoverer recoverer) {
            ShareKafkaListenerContainerFactory<String, String> factory = factory(
                    brokers, Map.of(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 1, "share.acquire.mode", "record_limit"));
            factory.setShareConsumerRecordRecoverer(recoverer);
            return factory;
        }

        /** As shareFactory, with observation on: each record's listener span continues its trace. */
        @Bean
        ShareKafkaListenerContainerFactory<String, String> shareObservedFactory(
                @Value("${spring.embedded.kafka.brokers}") String brokers) {
            ShareKafkaListenerContainerFactory<String, String> factory = factory(
                    brokers, Map.of(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 1, "share.acquire.mode", "record_limit"));
            factory.getContainerProperties().setObservationEnabled(true);
            return factory;
        }

        /** Consumers that acquire up to 20 records a poll (the client's default acquire mode). */
        @Bean
        ShareKafkaListenerContainerFactory<String, String> sharePollFactory(
                @Value("${spring.embedded.kafka.brokers}") String brokers) {
            return factory(brokers, Map.of(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 20));
        }

        private static ShareKafkaListenerContainerFactory<String, String> factory(
                String brokers, Map<String, Object> acquisition) {
            Map<String, Object> config = new java.util.HashMap<>(acquisition);
            config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
            config.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
            config.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
            ShareKafkaListenerContainerFactory<String, String> factory =
                    new ShareKafkaListenerContainerFactory<>(new DefaultShareConsumerFactory<>(config));
            factory.setConcurrency(2);
            return factory;
        }

        /** Share groups start at the latest offset by default: these read from the first record. */
        @Bean
        SmartLifecycle shareGroupsFromEarliest(KafkaAdmin kafkaAdmin) {
            return ShareGroups.fromEarliest(
                    kafkaAdmin,
                    List.of(
                            "share-mail",
                            "share-busy",
                            "share-busy-control",
                            "share-budget",
                            "share-long",
                            "share-overrun",
                            "share-recovered",
                            "share-kit",
                            "share-kit-plain",
                            "share-traced",
                            "share-traced-plain"));
        }
    }
}
