package io.sumi.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentHandler;
import io.sumi.store.ClaimOutcome;
import io.sumi.store.ClaimRequest;
import io.sumi.store.ClaimResult;
import io.sumi.store.MessageStatus;
import io.sumi.store.ProcessedMessage;
import io.sumi.store.ProcessedMessageStore;
import io.sumi.store.jdbc.JdbcProcessedMessageStore;
import io.sumi.testing.LedgerTime;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.apache.kafka.clients.admin.AdminClient;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Bean;
import org.springframework.dao.DataAccessResourceFailureException;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.core.ConsumerFactory;
import org.springframework.kafka.core.ConsumerPostProcessor;
import org.springframework.kafka.core.KafkaAdmin;
import org.springframework.kafka.listener.MessageListenerContainer;
import org.springframework.kafka.listener.adapter.RecordFilterStrategy;

/**
 * The poll-level claim ({@code sumi.kafka.poll-claim=true}) of lease-mode record listeners,
 * against an in-process KRaft broker and a real PostgreSQL: one claim round trip per poll,
 * duplicates inside a poll and across two consumers of one ledger namespace, a busy key, a failure
 * mid-poll, a consumer joining mid-run, and the promise the whole design rests on: no offset is
 * committed before the completions of the records below it are in the ledger (checked inside every
 * commit, with a negative control that watches the same commits from before Sumi's flush).
 */
@SpringBootTest(
        classes = KafkaPollClaimIntegrationTests.App.class,
        properties = {
            "spring.kafka.consumer.auto-offset-reset=earliest",
            "spring.kafka.consumer.properties.max.poll.interval.ms=60000",
            "spring.kafka.listener.concurrency=1",
            "spring.flyway.locations=classpath:db/sumi/{vendor}",
            "sumi.kafka.busy-retry-interval=100ms",
            "sumi.kafka.poll-claim=true",
            "sumi.consumer.lease=30s"
        })
class KafkaPollClaimIntegrationTests extends KafkaStarterTestBase {

    @Autowired
    Effects effects;

    @Autowired
    StoreCalls calls;

    @Autowired
    MeterRegistry meters;

    @Autowired
    KafkaListenerEndpointRegistry registry;

    @Autowired
    KafkaAdmin admin;

    @Autowired
    DataSource dataSource;

    static ProducerRecord<String, String> record(String topic, String key) {
        return record(topic, null, key);
    }

    static ProducerRecord<String, String> record(String topic, Integer partition, String key) {
        ProducerRecord<String, String> record = new ProducerRecord<>(topic, partition, key, "payload-" + key);
        record.headers().add("outbox-id", key.getBytes(StandardCharsets.UTF_8));
        return record;
    }

    void send(List<ProducerRecord<String, String>> records) {
        records.forEach(template::send);
        template.flush();
    }

    @Test
    void aPollIsClaimedInOneRoundTripAndDuplicatesInsideItAndFromBeforeRunOnce() throws Exception {
        // Ten keys completed before the poll, twenty keys twice inside it, ten keys once.
        for (int i = 30; i < 40; i++) {
            ProcessedMessage row = store.claim("pc-dup", new ClaimRequest("d" + i, null), Duration.ofSeconds(30))
                    .message();
            store.complete(row);
        }
        List<ProducerRecord<String, String>> records = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            records.add(record("pc.dup", "d" + i));
            if (i < 20) {
                records.add(record("pc.dup", "d" + i));
            }
        }
        send(records);
        calls.reset("pc-dup");
        registry.getListenerContainer("pc-dup").start();

        await().atMost(Duration.ofSeconds(30)).until(() -> committed("pc-dup", "pc.dup") == 60);
        assertThat(effects.counts("pc-dup"))
                .hasSize(30)
                .allSatisfy((key, count) -> assertThat(count.get()).as(key).isEqualTo(1));
        assertThat(effects.counts("pc-dup")).doesNotContainKeys("d30", "d39");
        for (int i = 0; i < 40; i++) {
            assertThat(store.find("pc-dup", "d" + i))
                    .get()
                    .extracting(ProcessedMessage::status)
                    .isEqualTo(MessageStatus.COMPLETED);
        }
        assertThat(count("pc-dup", "processed")).isEqualTo(30);
        assertThat(count("pc-dup", "duplicate")).isEqualTo(30);
        // One claim and one completion per poll, not one per record: 60 records, at most a few polls.
        assertThat(calls.claimAllSizes("pc-dup"))
                .isNotEmpty()
                .allSatisfy(size -> assertThat(size).isGreaterThan(1));
        assertThat(calls.claimAllSizes("pc-dup").stream()
                        .mapToInt(Integer::intValue)
                        .sum())
                .isEqualTo(60);
        assertThat(calls.completeAllCount("pc-dup"))
                .isLessThanOrEqualTo(calls.claimAllSizes("pc-dup").size());
    }

    @Test
    void noOffsetIsCommittedBeforeTheCompletionsOfTheRecordsBelowItAreInTheLedger() throws Exception {
        List<ProducerRecord<String, String>> records = new ArrayList<>();
        for (int i = 0; i < 200; i++) {
            records.add(record("pc.order", "o" + (i % 150)));
        }
        send(records);

        await().atMost(Duration.ofSeconds(30)).until(() -> committed("pc-order", "pc.order") == 200);
        CommitChecker inside = CommitChecker.INSIDE;
        CommitChecker outside = CommitChecker.OUTSIDE;
        assertThat(inside.checked.get()).as("records checked at commits").isGreaterThanOrEqualTo(200);
        assertThat(inside.violations).as("commits seen after Sumi's flush").isEmpty();
        // The negative control: the same commits, watched before Sumi's flush, find records whose
        // completion is not in the ledger yet. A poll claim that wrote its completions after the
        // commit (or not at all) would look like this from inside too.
        assertThat(outside.violations).as("commits seen before Sumi's flush").isNotEmpty();
        assertThat(effects.counts("pc-order"))
                .hasSize(150)
                .allSatisfy((key, count) -> assertThat(count.get()).isEqualTo(1));
    }

    @Test
    void aBusyKeyIsNotAckedAndRunsOnceItsHolderLetsGo() throws Exception {
        ClaimResult foreign = store.claim("pc-busy", new ClaimRequest("b1", null), Duration.ofSeconds(30));
        assertThat(foreign.outcome()).isEqualTo(ClaimOutcome.CLAIMED);
        send(List.of(record("pc.busy", "b0"), record("pc.busy", "b1"), record("pc.busy", "b2")));

        await().atMost(Duration.ofSeconds(30))
                .until(() -> effects.counts("pc-busy").containsKey("b0"));
        // Wait for retries of b1 instead of for a fixed time: b2 must still be held back after them.
        await().atMost(Duration.ofSeconds(30)).until(() -> count("pc-busy", "busy") >= 2);
        // b1 is retried (BUSY is never recovered) and holds back b2 behind it on its partition.
        assertThat(effects.counts("pc-busy")).containsOnlyKeys("b0");
        assertThat(committed("pc-busy", "pc.busy")).isEqualTo(1);
        assertThat(count("pc-busy", "busy")).isGreaterThanOrEqualTo(2);

        store.release(foreign.message(), "the other consumer gave up");
        // b2 is claimed with every poll of the retries and released when the error handler seeks
        // back; a claim left held (30 s lease) would keep it BUSY far beyond this wait.
        await().atMost(Duration.ofSeconds(10)).until(() -> committed("pc-busy", "pc.busy") == 3);
        assertThat(effects.counts("pc-busy"))
                .containsOnlyKeys("b0", "b1", "b2")
                .allSatisfy((key, count) -> assertThat(count.get()).isEqualTo(1));
    }

    @Test
    void aFailureMidPollReleasesTheRecordsAfterItWhichAreRedeliveredAndRunOnce() throws Exception {
        effects.failOnce.add("f4");
        List<ProducerRecord<String, String>> records = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            records.add(record("pc.fail", "f" + i));
        }
        send(records);
        calls.reset("pc-fail");
        registry.getListenerContainer("pc-fail").start();

        // With a 30 s lease, a claim left held would make the redelivery BUSY far beyond this wait.
        await().atMost(Duration.ofSeconds(15)).until(() -> committed("pc-fail", "pc.fail") == 10);
        assertThat(effects.counts("pc-fail"))
                .hasSize(10)
                .allSatisfy((key, count) -> assertThat(count.get()).as(key).isEqualTo(1));
        assertThat(effects.attempts("pc-fail", "f4")).isEqualTo(2);
        assertThat(calls.claimAllSizes("pc-fail").get(0)).isEqualTo(10);
        for (int i = 0; i < 10; i++) {
            // f4 ran twice; f5..f9 were claimed with the poll and given back unrun when f4 failed,
            // which counts no attempt (issue 19, A1): their one attempt is the run.
            int expectedAttempts = i == 4 ? 2 : 1;
            assertThat(store.find("pc-fail", "f" + i)).get().satisfies(row -> {
                assertThat(row.status()).isEqualTo(MessageStatus.COMPLETED);
                assertThat(row.attempts()).isEqualTo(expectedAttempts);
            });
        }
    }

    @Test
    void twoConsumersOfOneLedgerNamespaceRunEachKeyOnce() throws Exception {
        List<ProducerRecord<String, String>> records = new ArrayList<>();
        for (int i = 0; i < 300; i++) {
            // 30 % of the records repeat a key, some on another partition.
            String key = "s" + (i % 10 < 3 ? i / 2 : i);
            records.add(record("pc.shared", i % 3, key));
        }
        long distinct = records.stream().map(ProducerRecord::key).distinct().count();
        send(records);

        await().atMost(Duration.ofSeconds(60))
                .until(() -> committedTotal("pc-shared-a", "pc.shared", 3) == 300
                        && committedTotal("pc-shared-b", "pc.shared", 3) == 300);
        assertThat(effects.counts("pc-shared"))
                .hasSize((int) distinct)
                .allSatisfy((key, count) -> assertThat(count.get()).as(key).isEqualTo(1));
        records.stream()
                .map(ProducerRecord::key)
                .distinct()
                .forEach(key -> assertThat(store.find("pc-shared", key))
                        .get()
                        .extracting(ProcessedMessage::status)
                        .isEqualTo(MessageStatus.COMPLETED));
    }

    /**
     * A second consumer joins the group while the first is mid-run. Forced, not hoped for: the
     * first consumer's 10th record waits in its handler until the test has asked its container to
     * pause; a paused container finishes the poll it is in (at most 10 records) and then keeps
     * polling without records, so it rejoins the group when the second consumer joins (a consumer
     * blocked in a handler would not: the rebalance waits for every member's poll) and runs nothing
     * meanwhile. So when the second consumer is assigned its partitions, the first has run fewer than
     * 20 of the 400 records and every partition still has records: both consumers must run some.
     */
    @Test
    void aConsumerJoiningMidRunTakesPartitionsWithoutLossOrDoubleEffect() throws Exception {
        List<ProducerRecord<String, String>> records = new ArrayList<>();
        for (int i = 0; i < 400; i++) {
            records.add(record("pc.rebalance", i % 4, "r" + i));
        }
        send(records);
        MessageListenerContainer first = registry.getListenerContainer("pc-rebalance-1");
        MessageListenerContainer second = registry.getListenerContainer("pc-rebalance-2");
        first.start();
        assertThat(effects.rebalanceFirstWaits.await(30, TimeUnit.SECONDS))
                .as("the first consumer reached its 10th record")
                .isTrue();
        first.pause();
        effects.rebalanceFirstGoesOn.countDown();
        await().atMost(Duration.ofSeconds(30)).until(first::isContainerPaused);
        int ranAlone = effects.ranBy("pc-rebalance-1");
        assertThat(ranAlone)
                .as("the first consumer ran at most the poll it was paused in (max.poll.records=10)")
                .isLessThan(20);

        second.start();
        await().atMost(Duration.ofSeconds(60)).until(() -> {
            Collection<TopicPartition> assigned = second.getAssignedPartitions();
            return assigned != null && !assigned.isEmpty();
        });
        assertThat(effects.ranBy("pc-rebalance-1"))
                .as("the paused first consumer ran nothing while the second joined")
                .isEqualTo(ranAlone);
        first.resume();

        await().atMost(Duration.ofSeconds(60)).until(() -> committedTotal("pc-rebalance", "pc.rebalance", 4) == 400);
        assertThat(effects.counts("pc-rebalance"))
                .hasSize(400)
                .allSatisfy((key, count) -> assertThat(count.get()).as(key).isEqualTo(1));
        // Each consumer was assigned partitions with records left, so each ran some after the join.
        assertThat(effects.ranBy("pc-rebalance-1")).as("run by the first").isGreaterThan(ranAlone);
        assertThat(effects.ranBy("pc-rebalance-2")).as("run by the second").isPositive();
        assertThat(effects.ranBy("pc-rebalance-1") + effects.ranBy("pc-rebalance-2"))
                .as("runs of the two consumers")
                .isEqualTo(400);
        for (int i = 0; i < 400; i++) {
            assertThat(store.find("pc-rebalance", "r" + i))
                    .get()
                    .extracting(ProcessedMessage::status)
                    .isEqualTo(MessageStatus.COMPLETED);
        }
    }

    /**
     * Issue 19, A1: the first record of the poll is held by a live claim elsewhere for longer than
     * the handler's reconcile-after (2 s). Every busy retry re-polls and re-claims the records behind
     * it and gives them back unrun; counted as attempts (take-overs keeping the first claim's time),
     * the next record was then held for reconciliation without ever having run.
     */
    @Test
    void recordsBehindABusyRecordThatOutlastsReconcileAfterRunOnceAndAreNeverHeldForReconciliation() throws Exception {
        ClaimResult foreign = store.claim("pc-held", new ClaimRequest("h0", null), Duration.ofSeconds(60));
        assertThat(foreign.outcome()).isEqualTo(ClaimOutcome.CLAIMED);
        List<ProducerRecord<String, String>> records = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            records.add(record("pc.held", "h" + i));
        }
        send(records);
        Instant sent = dbNow();
        registry.getListenerContainer("pc-held").start();

        // The block outlasts reconcile-after on the ledger's clock, and the retries (each a re-poll
        // and a re-claim of h1..h4) go on after that.
        await().atMost(Duration.ofSeconds(30)).until(() -> dbNow().isAfter(sent.plusSeconds(3)));
        double busy = count("pc-held", "busy");
        await().atMost(Duration.ofSeconds(30)).until(() -> count("pc-held", "busy") >= busy + 3);
        assertThat(effects.counts("pc-held")).isEmpty();

        store.complete(foreign.message()); // the other instance finishes h0
        await().atMost(Duration.ofSeconds(30))
                .until(() -> committed("pc-held", "pc.held") == 5 || heldForReconciliation("pc-held") > 0);
        for (int i = 1; i < 5; i++) {
            assertThat(store.find("pc-held", "h" + i)).get().satisfies(row -> {
                assertThat(row.status()).as(row.messageId()).isEqualTo(MessageStatus.COMPLETED);
                assertThat(row.attempts()).as(row.messageId()).isEqualTo(1);
            });
        }
        assertThat(effects.counts("pc-held"))
                .containsOnlyKeys("h1", "h2", "h3", "h4")
                .allSatisfy((key, count) -> assertThat(count.get()).as(key).isEqualTo(1));
        assertThat(count("pc-held", "reconcile")).isZero();
        assertThat(committed("pc-held", "pc.held")).isEqualTo(5);
    }

    /**
     * Issue 19, A1: a record a {@code RecordFilterStrategy} drops was claimed with its poll and never
     * run. Its claim used to stay behind as an attempt; when the same message came again after the
     * handler's reconcile-after (1 h, the row aged by 2 h), it was held for reconciliation unrun.
     */
    @Test
    void aRecordDroppedByARecordFilterCountsNoAttemptAndRunsWhenItComesAgainLater() throws Exception {
        ProducerRecord<String, String> skipped = record("pc.filter", "x1");
        skipped.headers().add("test-skip", new byte[] {1});
        send(List.of(record("pc.filter", "x0"), skipped, record("pc.filter", "x2")));
        registry.getListenerContainer("pc-filter").start();

        await().atMost(Duration.ofSeconds(30)).until(() -> committed("pc-filter", "pc.filter") == 3);
        assertThat(effects.counts("pc-filter")).containsOnlyKeys("x0", "x2");
        // The same message again (a replay), not filtered this time.
        leftNothingAndRunsOnceWhenItComesAgainLater("pc-filter", "pc.filter", "x1", 3);
    }

    /**
     * Issue 19, A1: a poison record (its value cannot be deserialized) in the middle of a poll is
     * recovered by the error handler without the listener running. Its claim, taken with the poll,
     * used to count as an attempt; replayed after reconcile-after (a dead letter fixed and sent
     * again), it was held for reconciliation without ever having run.
     */
    @Test
    void aPoisonRecordRecoveredWithoutRunningCountsNoAttemptAndItsReplayRuns() throws Exception {
        ProducerRecord<String, String> poison = new ProducerRecord<>("pc.poison", "p1", "poison-p1");
        poison.headers().add("outbox-id", "p1".getBytes(StandardCharsets.UTF_8));
        send(List.of(record("pc.poison", "p0"), poison, record("pc.poison", "p2")));
        registry.getListenerContainer("pc-poison").start();

        await().atMost(Duration.ofSeconds(30)).until(() -> committed("pc-poison", "pc.poison") == 3);
        assertThat(effects.counts("pc-poison")).containsOnlyKeys("p0", "p2");
        // The dead letter, fixed, replayed.
        leftNothingAndRunsOnceWhenItComesAgainLater("pc-poison", "pc.poison", "p1", 3);
    }

    /**
     * {@code key}, claimed with its poll and never run, left no row behind; sent again after its
     * handler's reconcile-after (1 h: the namespace is aged by 2 h), it runs once as attempt 1
     * instead of being held for reconciliation as an uncertain take-over.
     */
    void leftNothingAndRunsOnceWhenItComesAgainLater(String consumer, String topic, String key, long committed)
            throws Exception {
        // The claim is given back when the consumer polls after the commit, not at the commit: wait
        // for that poll (seen from inside Sumi's wrapper, so after the give-back) instead of
        // hoping that it came before the look at the ledger.
        TopicPartition partition = new TopicPartition(topic, 0);
        await().atMost(Duration.ofSeconds(30))
                .until(() -> CommitChecker.INSIDE.polledAfterCommitting(partition) >= committed);
        assertThat(store.find(consumer, key))
                .as("the claim of " + key + ", given back unrun, leaves nothing behind")
                .isEmpty();
        LedgerTime.age(dataSource, consumer, Duration.ofHours(2));
        send(List.of(record(topic, key)));
        await().atMost(Duration.ofSeconds(30))
                .until(() -> committed(consumer, topic) == committed + 1 || heldForReconciliation(consumer) > 0);
        assertThat(store.find(consumer, key)).get().satisfies(row -> {
            assertThat(row.status()).isEqualTo(MessageStatus.COMPLETED);
            assertThat(row.attempts()).isEqualTo(1);
        });
        assertThat(effects.counts(consumer).get(key)).hasValue(1);
    }

    /**
     * Issue 19, A5: the container stops while the ledger cannot be reached. Spring Kafka's shutdown
     * commits the pending acks and unsubscribes before it closes the consumer, and stopped there when
     * either threw: the consumer stayed in its group and the poll's claims were renewed for ever.
     * Now the consumer is closed, renewal stops, nothing is committed, the claims lapse, and a
     * restart runs the records again and completes them.
     */
    @Test
    void aContainerStoppedWhileTheLedgerIsUnreachableClosesItsConsumerAndLetsItsClaimsLapse() throws Exception {
        send(List.of(record("pc.stop", "st0"), record("pc.stop", "st1"), record("pc.stop", "st2")));
        MessageListenerContainer container = registry.getListenerContainer("pc-stop");
        container.start();
        assertThat(effects.stopEntered.await(30, TimeUnit.SECONDS)).isTrue();
        await().atMost(Duration.ofSeconds(30)).until(() -> members("pc-stop") == 1);

        calls.unreachable.add("pc-stop"); // from here the ledger fails every call of this consumer
        CountDownLatch stopped = new CountDownLatch(1);
        container.stop(stopped::countDown);
        effects.stopProceed.countDown(); // st0 returns: its completion, and st1's and st2's, cannot be written

        await().atMost(Duration.ofSeconds(30))
                .alias("the consumer was closed: it left its group")
                .until(() -> members("pc-stop") == 0);
        assertThat(stopped.await(30, TimeUnit.SECONDS))
                .as("the container stopped")
                .isTrue();
        assertThat(committed("pc-stop", "pc.stop")).as("nothing committed").isZero();

        calls.unreachable.remove("pc-stop"); // the ledger is back
        int renewals = calls.renewAllCount("pc-stop");
        Map<String, Instant> leases = new ConcurrentHashMap<>();
        for (int i = 0; i < 3; i++) {
            ProcessedMessage row = store.find("pc-stop", "st" + i).orElseThrow();
            assertThat(row.status()).isEqualTo(MessageStatus.IN_PROGRESS);
            leases.put(row.messageId(), row.leaseUntil());
        }
        Instant last = leases.values().stream().max(Instant::compareTo).orElseThrow();
        // Renewed, the leases would move on (a third of the 3 s lease at a time) and never end.
        await().atMost(Duration.ofSeconds(20)).until(() -> dbNow().isAfter(last.plusMillis(500)));
        for (int i = 0; i < 3; i++) {
            assertThat(store.find("pc-stop", "st" + i))
                    .get()
                    .extracting(ProcessedMessage::leaseUntil)
                    .as("st" + i + " not renewed after the stop")
                    .isEqualTo(leases.get("st" + i));
        }
        assertThat(calls.renewAllCount("pc-stop"))
                .as("no renewal after the stop")
                .isEqualTo(renewals);

        container.start(); // nothing lost: the records come again and are taken over
        await().atMost(Duration.ofSeconds(30)).until(() -> committed("pc-stop", "pc.stop") == 3);
        for (int i = 0; i < 3; i++) {
            assertThat(store.find("pc-stop", "st" + i))
                    .get()
                    .extracting(ProcessedMessage::status)
                    .isEqualTo(MessageStatus.COMPLETED);
        }
        container.stop();
    }

    Instant dbNow() {
        return new JdbcTemplate(dataSource)
                .queryForObject("SELECT statement_timestamp()", Timestamp.class)
                .toInstant();
    }

    int heldForReconciliation(String consumer) {
        Integer held = new JdbcTemplate(dataSource)
                .queryForObject(
                        "SELECT COUNT(*) FROM processed_messages WHERE consumer = ? AND status = 'RECONCILE'",
                        Integer.class,
                        consumer);
        return held == null ? 0 : held;
    }

    int members(String group) throws Exception {
        try (AdminClient client = AdminClient.create(admin.getConfigurationProperties())) {
            ConsumerGroupDescription description = client.describeConsumerGroups(List.of(group))
                    .all()
                    .get(10, TimeUnit.SECONDS)
                    .get(group);
            return description == null ? 0 : description.members().size();
        }
    }

    @Test
    void aPollLongerThanItsLeaseKeepsItsClaimsRenewedUntilTheirCompletion() throws Exception {
        Competitor competitor = slowPoll("pc-slow", "pc.slow", "sl");

        assertThat(competitor.outcomes)
                .as("another ledger client never took a claim of the running poll over")
                .doesNotContain(ClaimOutcome.CLAIMED)
                .contains(ClaimOutcome.BUSY);
        assertThat(effects.counts("pc-slow"))
                .hasSize(4)
                .allSatisfy((key, count) -> assertThat(count.get()).as(key).isEqualTo(1));
        assertThat(meter("sumi.leases.renewals", "pc-slow", "result", "renewed"))
                .as("renewed every third of the 1 s lease while the poll ran")
                .isGreaterThanOrEqualTo(4);
        assertThat(meter("sumi.leases.lost", "pc-slow", null, null)).isZero();
        for (int i = 0; i < 4; i++) {
            assertThat(store.find("pc-slow", "sl" + i)).get().satisfies(row -> {
                assertThat(row.status()).isEqualTo(MessageStatus.COMPLETED);
                assertThat(row.attempts()).isEqualTo(1);
            });
        }
    }

    /**
     * Negative control: the same poll, whose renewal stops after its max run time (500 ms, less
     * than one lease), is taken over by the other ledger client; the late completion is counted lost.
     */
    @Test
    void aPollWhoseRenewalStopsIsTakenOverByAnotherLedgerClient() throws Exception {
        Competitor competitor = slowPoll("pc-slow-bounded", "pc.slow.bounded", "sb");

        assertThat(competitor.outcomes).as("taken over while the poll ran").contains(ClaimOutcome.CLAIMED);
        assertThat(meter("sumi.leases.overruns", "pc-slow-bounded", null, null)).isEqualTo(1);
        assertThat(meter("sumi.leases.lost", "pc-slow-bounded", null, null)).isGreaterThanOrEqualTo(1);
    }

    /** What another ledger client (a second store on the same database) got for the keys of a running poll. */
    static final class Competitor {
        final List<ClaimOutcome> outcomes = new CopyOnWriteArrayList<>();
    }

    /**
     * Four records of one lease each of the 1 s handlers (measured in the poll's renewal
     * statements, or until another client took a claim over) in one poll; while it runs,
     * a second store on the same database tries to claim its keys every 100 ms, and completes what
     * it wins (the effect of a consumer that took the message over).
     */
    Competitor slowPoll(String consumer, String topic, String prefix) throws Exception {
        List<ProducerRecord<String, String>> records = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            records.add(record(topic, prefix + i));
        }
        send(records);
        ProcessedMessageStore other =
                JdbcProcessedMessageStore.builder(dataSource).build();
        registry.getListenerContainer(consumer).start();
        await().atMost(Duration.ofSeconds(30)).until(() -> effects.attempts(consumer, prefix + "0") == 1);

        Competitor competitor = new Competitor();
        await().atMost(Duration.ofSeconds(60))
                .pollInterval(Duration.ofMillis(100))
                .until(() -> {
                    for (int i = 1; i < 4; i++) {
                        ClaimResult result =
                                other.claim(consumer, new ClaimRequest(prefix + i, null), Duration.ofSeconds(30));
                        competitor.outcomes.add(result.outcome());
                        if (result.outcome() == ClaimOutcome.CLAIMED) {
                            other.complete(result.message());
                            effects.takenOver.add(consumer); // the running poll's record may return now
                        }
                    }
                    return committed(consumer, topic) >= 4;
                });
        registry.getListenerContainer(consumer).stop();
        return competitor;
    }

    double meter(String name, String consumer, String tag, String value) {
        var search = meters.find(name).tag("consumer", consumer);
        var counter = (tag == null ? search : search.tag(tag, value)).counter();
        return counter == null ? 0 : counter.count();
    }

    double count(String consumer, String outcome) {
        var counter = meters.find("sumi.messages")
                .tag("consumer", consumer)
                .tag("outcome", outcome)
                .counter();
        return counter == null ? 0 : counter.count();
    }

    long committed(String group, String topic) throws Exception {
        return committedTotal(group, topic, 1);
    }

    long committedTotal(String group, String topic, int partitions) throws Exception {
        try (AdminClient client = AdminClient.create(admin.getConfigurationProperties())) {
            Map<TopicPartition, OffsetAndMetadata> offsets = client.listConsumerGroupOffsets(group)
                    .partitionsToOffsetAndMetadata()
                    .get(10, TimeUnit.SECONDS);
            long total = 0;
            for (int p = 0; p < partitions; p++) {
                OffsetAndMetadata offset = offsets.get(new TopicPartition(topic, p));
                total += offset == null ? 0 : offset.offset();
            }
            return total;
        }
    }

    /** What the listeners did, per ledger consumer and key. */
    static class Effects {
        final Map<String, Map<String, AtomicInteger>> counts = new ConcurrentHashMap<>();
        final Map<String, AtomicInteger> attempts = new ConcurrentHashMap<>();
        final Set<String> failOnce = ConcurrentHashMap.newKeySet();
        /** pc-stop: st0's handler says it runs, then waits for the test to let it return. */
        final CountDownLatch stopEntered = new CountDownLatch(1);

        final CountDownLatch stopProceed = new CountDownLatch(1);
        /** pc-slow*: consumers one of whose claims another ledger client has taken over. */
        final Set<String> takenOver = ConcurrentHashMap.newKeySet();
        /** pc-rebalance: records run per listener container. */
        final Map<String, AtomicInteger> ranBy = new ConcurrentHashMap<>();
        /** pc-rebalance: the first consumer's 10th record waits in its handler until the test lets it go on. */
        final CountDownLatch rebalanceFirstWaits = new CountDownLatch(1);

        final CountDownLatch rebalanceFirstGoesOn = new CountDownLatch(1);

        void run(String consumer, String key) {
            attempts.computeIfAbsent(consumer + "/" + key, k -> new AtomicInteger())
                    .incrementAndGet();
            if (failOnce.remove(key)) {
                throw new IllegalStateException("failing " + key + " once");
            }
            counts(consumer).computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
        }

        Map<String, AtomicInteger> counts(String consumer) {
            return counts.computeIfAbsent(consumer, k -> new ConcurrentHashMap<>());
        }

        int attempts(String consumer, String key) {
            AtomicInteger count = attempts.get(consumer + "/" + key);
            return count == null ? 0 : count.get();
        }

        int ranBy(String container) {
            AtomicInteger count = ranBy.get(container);
            return count == null ? 0 : count.get();
        }
    }

    /** The store's batch calls, per ledger consumer: to see one claim per poll. */
    static class StoreCalls {
        final Map<String, List<Integer>> claimAll = new ConcurrentHashMap<>();
        final Map<String, AtomicInteger> completeAll = new ConcurrentHashMap<>();
        final Map<String, AtomicInteger> renewAll = new ConcurrentHashMap<>();
        /** Consumers for which every ledger call fails, as if the database could not be reached. */
        final Set<String> unreachable = ConcurrentHashMap.newKeySet();

        int renewAllCount(String consumer) {
            AtomicInteger count = renewAll.get(consumer);
            return count == null ? 0 : count.get();
        }

        void reset(String consumer) {
            claimAll.remove(consumer);
            completeAll.remove(consumer);
        }

        List<Integer> claimAllSizes(String consumer) {
            return claimAll.getOrDefault(consumer, List.of());
        }

        int completeAllCount(String consumer) {
            AtomicInteger count = completeAll.get(consumer);
            return count == null ? 0 : count.get();
        }
    }

    /**
     * Sits between a consumer and the broker (INSIDE: after Sumi's wrapper, as the broker sees the
     * commit; OUTSIDE: before it, as the container calls it) and checks, at every commit of the
     * {@code pc.order} topic, that every record below the committed offset is completed in the ledger.
     */
    enum CommitChecker {
        INSIDE,
        OUTSIDE;

        final AtomicInteger checked = new AtomicInteger();
        final List<String> violations = new CopyOnWriteArrayList<>();
        private final Map<TopicPartition, List<ConsumerRecord<?, ?>>> seen = new ConcurrentHashMap<>();
        /**
         * Per partition, the highest offset a consumer committed and then polled again after (on
         * any topic). INSIDE, that poll comes after Sumi settled the poll before it (its kept
         * completions written, its unrun claims given back), which Sumi does before every
         * {@code poll()}, not at the commit.
         */
        private final Map<TopicPartition, Long> polledAfterCommit = new ConcurrentHashMap<>();

        private volatile ProcessedMessageStore store;

        long polledAfterCommitting(TopicPartition partition) {
            return polledAfterCommit.getOrDefault(partition, -1L);
        }

        @SuppressWarnings("unchecked")
        <K, V> Consumer<K, V> wrap(Consumer<K, V> consumer) {
            // Used by the consumer's thread only, as the consumer itself.
            Map<TopicPartition, Long> committedSincePoll = new HashMap<>();
            return (Consumer<K, V>) Proxy.newProxyInstance(
                    getClass().getClassLoader(), new Class<?>[] {Consumer.class}, (proxy, method, args) -> {
                        if (method.getName().startsWith("commit")
                                && args != null
                                && args.length > 0
                                && args[0] instanceof Map<?, ?> offsets) {
                            check(offsets);
                            offsets.forEach((partition, offset) -> {
                                if (partition instanceof TopicPartition tp && offset instanceof OffsetAndMetadata at) {
                                    committedSincePoll.merge(tp, at.offset(), Math::max);
                                }
                            });
                        }
                        if (method.getName().equals("poll")) {
                            committedSincePoll.forEach(
                                    (partition, offset) -> polledAfterCommit.merge(partition, offset, Math::max));
                            committedSincePoll.clear();
                        }
                        Object result;
                        try {
                            result = method.invoke(consumer, args);
                        } catch (InvocationTargetException ex) {
                            throw ex.getCause();
                        }
                        if (result instanceof ConsumerRecords<?, ?> records) {
                            for (ConsumerRecord<?, ?> record : records) {
                                if (record.topic().equals("pc.order")) {
                                    seen.computeIfAbsent(
                                                    new TopicPartition(record.topic(), record.partition()),
                                                    tp -> new CopyOnWriteArrayList<>())
                                            .add(record);
                                }
                            }
                        }
                        return result;
                    });
        }

        private void check(Map<?, ?> offsets) {
            offsets.forEach((partition, offset) -> {
                List<ConsumerRecord<?, ?>> records = seen.get(partition);
                if (records == null || !(offset instanceof OffsetAndMetadata committed)) {
                    return;
                }
                for (ConsumerRecord<?, ?> record : records) {
                    if (record.offset() < committed.offset()) {
                        String key = new String(
                                record.headers().lastHeader("outbox-id").value(), StandardCharsets.UTF_8);
                        checked.incrementAndGet();
                        boolean completed = store.find("pc-order", key)
                                .map(ProcessedMessage::isCompleted)
                                .orElse(false);
                        if (completed) {
                            records.remove(record);
                        } else {
                            violations.add(key + "@" + record.offset() + " below committed " + committed.offset());
                        }
                    }
                }
            });
        }
    }

    record Checking<K, V>(CommitChecker checker) implements ConsumerPostProcessor<K, V> {
        @Override
        public Consumer<K, V> apply(Consumer<K, V> consumer) {
            return checker.wrap(consumer);
        }
    }

    static class Listeners {
        private final Effects effects;
        private final StoreCalls calls;

        Listeners(Effects effects, StoreCalls calls) {
            this.effects = effects;
            this.calls = calls;
        }

        /**
         * A record's run of one lease, measured in the poll's renewal statements (one every third of
         * the lease), not slept through; it ends early once another client has taken a claim of the
         * poll over (with renewal stopped, no statement is made).
         */
        private void runsForALease(String consumer) {
            int target = calls.renewAllCount(consumer) + 3;
            await().atMost(Duration.ofSeconds(30))
                    .pollInterval(Duration.ofMillis(20))
                    .until(() -> calls.renewAllCount(consumer) >= target || effects.takenOver.contains(consumer));
        }

        @KafkaListener(id = "pc-dup", topics = "pc.dup", groupId = "pc-dup", autoStartup = "false")
        @IdempotentHandler(consumer = "pc-dup", mode = IdempotencyMode.LEASE)
        void dup(ConsumerRecord<String, String> record) {
            effects.run("pc-dup", record.key());
        }

        @KafkaListener(id = "pc-order", topics = "pc.order", groupId = "pc-order")
        @IdempotentHandler(consumer = "pc-order")
        void order(String payload) {
            effects.run("pc-order", payload.substring("payload-".length()));
        }

        @KafkaListener(id = "pc-busy", topics = "pc.busy", groupId = "pc-busy")
        @IdempotentHandler(consumer = "pc-busy")
        void busy(ConsumerRecord<String, String> record) {
            effects.run("pc-busy", record.key());
        }

        @KafkaListener(id = "pc-fail", topics = "pc.fail", groupId = "pc-fail", autoStartup = "false")
        @IdempotentHandler(consumer = "pc-fail")
        void fail(ConsumerRecord<String, String> record) {
            effects.run("pc-fail", record.key());
        }

        @KafkaListener(id = "pc-held", topics = "pc.held", groupId = "pc-held", autoStartup = "false")
        @IdempotentHandler(consumer = "pc-held", reconcileAfter = "2s")
        void held(ConsumerRecord<String, String> record) {
            effects.run("pc-held", record.key());
        }

        @KafkaListener(
                id = "pc-filter",
                topics = "pc.filter",
                groupId = "pc-filter",
                autoStartup = "false",
                filter = "skipMarked")
        @IdempotentHandler(consumer = "pc-filter", reconcileAfter = "1h")
        void filtered(ConsumerRecord<String, String> record) {
            effects.run("pc-filter", record.key());
        }

        @KafkaListener(
                id = "pc-poison",
                topics = "pc.poison",
                groupId = "pc-poison",
                autoStartup = "false",
                properties = {
                    "value.deserializer=org.springframework.kafka.support.serializer.ErrorHandlingDeserializer",
                    "spring.deserializer.value.delegate.class=io.sumi.autoconfigure.PoisonPillDeserializer"
                })
        @IdempotentHandler(consumer = "pc-poison", reconcileAfter = "1h")
        void poison(ConsumerRecord<String, String> record) {
            effects.run("pc-poison", record.key());
        }

        @KafkaListener(id = "pc-stop", topics = "pc.stop", groupId = "pc-stop", autoStartup = "false")
        @IdempotentHandler(consumer = "pc-stop", lease = "3s")
        void stop(ConsumerRecord<String, String> record) throws InterruptedException {
            if (record.key().equals("st0")) {
                effects.stopEntered.countDown();
                effects.stopProceed.await(30, TimeUnit.SECONDS);
            }
            effects.run("pc-stop", record.key());
        }

        @KafkaListener(id = "pc-slow", topics = "pc.slow", groupId = "pc-slow", autoStartup = "false")
        @IdempotentHandler(consumer = "pc-slow", lease = "1s")
        void slow(ConsumerRecord<String, String> record) throws InterruptedException {
            effects.run("pc-slow", record.key());
            runsForALease("pc-slow");
        }

        @KafkaListener(
                id = "pc-slow-bounded",
                topics = "pc.slow.bounded",
                groupId = "pc-slow-bounded",
                autoStartup = "false")
        @IdempotentHandler(consumer = "pc-slow-bounded", lease = "1s", maxRun = "500ms")
        void slowBounded(ConsumerRecord<String, String> record) throws InterruptedException {
            effects.run("pc-slow-bounded", record.key());
            runsForALease("pc-slow-bounded");
        }

        @KafkaListener(id = "pc-shared-a", topics = "pc.shared", groupId = "pc-shared-a")
        @IdempotentHandler(consumer = "pc-shared")
        void sharedA(ConsumerRecord<String, String> record) {
            effects.run("pc-shared", record.key());
        }

        @KafkaListener(id = "pc-shared-b", topics = "pc.shared", groupId = "pc-shared-b")
        @IdempotentHandler(consumer = "pc-shared")
        void sharedB(ConsumerRecord<String, String> record) {
            effects.run("pc-shared", record.key());
        }

        @KafkaListener(
                id = "pc-rebalance-1",
                topics = "pc.rebalance",
                groupId = "pc-rebalance",
                autoStartup = "false",
                properties = "max.poll.records=10")
        @IdempotentHandler(consumer = "pc-rebalance")
        void rebalance1(ConsumerRecord<String, String> record) throws InterruptedException {
            rebalanced("pc-rebalance-1", record);
        }

        @KafkaListener(
                id = "pc-rebalance-2",
                topics = "pc.rebalance",
                groupId = "pc-rebalance",
                autoStartup = "false",
                properties = "max.poll.records=10")
        @IdempotentHandler(consumer = "pc-rebalance")
        void rebalance2(ConsumerRecord<String, String> record) throws InterruptedException {
            rebalanced("pc-rebalance-2", record);
        }

        private void rebalanced(String container, ConsumerRecord<String, String> record) throws InterruptedException {
            effects.run("pc-rebalance", record.key());
            int ran = effects.ranBy
                    .computeIfAbsent(container, k -> new AtomicInteger())
                    .incrementAndGet();
            if (container.equals("pc-rebalance-1") && ran == 10) {
                effects.rebalanceFirstWaits.countDown();
                // Bounded: a test that never lets it go fails on its own assertions, not by hanging.
                effects.rebalanceFirstGoesOn.await(30, TimeUnit.SECONDS);
            }
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
        StoreCalls storeCalls() {
            return new StoreCalls();
        }

        @Bean
        MeterRegistry meterRegistry() {
            return new SimpleMeterRegistry();
        }

        @Bean
        Listeners listeners(Effects effects, StoreCalls calls, org.springframework.jdbc.core.JdbcTemplate jdbc) {
            jdbc.update("DELETE FROM processed_messages WHERE consumer LIKE 'pc-%'");
            return new Listeners(effects, calls);
        }

        @Bean
        KafkaAdmin.NewTopics topics() {
            return new KafkaAdmin.NewTopics(
                    new NewTopic("pc.dup", 1, (short) 1),
                    new NewTopic("pc.order", 1, (short) 1),
                    new NewTopic("pc.busy", 1, (short) 1),
                    new NewTopic("pc.fail", 1, (short) 1),
                    new NewTopic("pc.held", 1, (short) 1),
                    new NewTopic("pc.filter", 1, (short) 1),
                    new NewTopic("pc.poison", 1, (short) 1),
                    new NewTopic("pc.stop", 1, (short) 1),
                    new NewTopic("pc.slow", 1, (short) 1),
                    new NewTopic("pc.slow.bounded", 1, (short) 1),
                    new NewTopic("pc.shared", 3, (short) 1),
                    new NewTopic("pc.rebalance", 4, (short) 1));
        }

        /** Drops the records marked with a {@code test-skip} header before the listener sees them. */
        @Bean
        RecordFilterStrategy<String, String> skipMarked() {
            return record -> record.headers().lastHeader("test-skip") != null;
        }

        /** Counts the ledger's batch calls (a proxy: the store is used through its interface). */
        @Bean
        static BeanPostProcessor countingStore(org.springframework.beans.factory.ObjectProvider<StoreCalls> calls) {
            return new BeanPostProcessor() {
                @Override
                public Object postProcessAfterInitialization(Object bean, String beanName) {
                    if (!(bean instanceof ProcessedMessageStore store)) {
                        return bean;
                    }
                    CommitChecker.INSIDE.store = store;
                    CommitChecker.OUTSIDE.store = store;
                    return Proxy.newProxyInstance(
                            getClass().getClassLoader(),
                            new Class<?>[] {ProcessedMessageStore.class},
                            (proxy, method, args) -> {
                                if (args != null
                                        && args.length > 0
                                        && args[0] instanceof String consumer
                                        && method.getName().equals("renewAll")) {
                                    calls.getObject()
                                            .renewAll
                                            .computeIfAbsent(consumer, k -> new AtomicInteger())
                                            .incrementAndGet();
                                }
                                if (args != null
                                        && args.length > 0
                                        && args[0] instanceof String consumer
                                        && calls.getObject().unreachable.contains(consumer)) {
                                    throw new DataAccessResourceFailureException(
                                            "ledger unreachable (injected) at " + method.getName());
                                }
                                if (method.getName().equals("claimAll")) {
                                    calls.getObject()
                                            .claimAll
                                            .computeIfAbsent((String) args[0], k -> new CopyOnWriteArrayList<>())
                                            .add(((List<?>) args[1]).size());
                                } else if (method.getName().equals("completeAll")) {
                                    calls.getObject()
                                            .completeAll
                                            .computeIfAbsent((String) args[0], k -> new AtomicInteger())
                                            .incrementAndGet();
                                }
                                try {
                                    return method.invoke(store, args);
                                } catch (InvocationTargetException ex) {
                                    throw ex.getCause();
                                }
                            });
                }
            };
        }

        /** The inside checker: added when the consumer factory is created, before Sumi's wrapper (so it wraps the raw consumer). */
        @Bean
        static BeanPostProcessor insideCommitChecker() {
            return new BeanPostProcessor() {
                @Override
                @SuppressWarnings({"unchecked", "rawtypes"})
                public Object postProcessAfterInitialization(Object bean, String beanName) {
                    if (bean instanceof ConsumerFactory factory) {
                        factory.addPostProcessor(new Checking<>(CommitChecker.INSIDE));
                    }
                    return bean;
                }
            };
        }

        /** The outside checker: added once every bean is ready, after Sumi's wrapper, so it sees commits first. */
        @Bean
        @SuppressWarnings({"unchecked", "rawtypes"})
        SmartInitializingSingleton outsideCommitChecker(ConsumerFactory<?, ?> factory) {
            return () -> ((ConsumerFactory) factory).addPostProcessor(new Checking<>(CommitChecker.OUTSIDE));
        }
    }
}
