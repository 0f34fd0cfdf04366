package io.sumi.store.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.lettuce.core.cluster.SlotHash;
import io.sumi.store.ClaimOutcome;
import io.sumi.store.ClaimRequest;
import io.sumi.store.ClaimResult;
import io.sumi.testing.RedisClusterExtension;
import io.sumi.testing.RedisClusterFixture;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The Redis ledger on a 3-master Redis Cluster with a replica per master: consumers on every one of
 * the 16,384 hash slots, claims raced from threads, and masters failing over mid-run, with and
 * without {@code WAIT}. The failover tests run last: each kills a master and starts it again as the
 * new master's replica.
 */
@ExtendWith(RedisClusterExtension.class)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class RedisClusterLedgerTests {

    static final Duration LEASE = Duration.ofMinutes(5);

    private static RedisClusterFixture cluster;

    @BeforeAll
    static void cluster(RedisClusterFixture fixture) {
        cluster = fixture;
    }

    private static RedisProcessedMessageStore store() {
        return RedisProcessedMessageStore.builder(cluster.connectionFactory())
                .prefix(TestRedis.PREFIX)
                .build();
    }

    private static RedisProcessedMessageStore waitingStore(Duration timeout) {
        return RedisProcessedMessageStore.builder(cluster.connectionFactory())
                .prefix(TestRedis.PREFIX)
                .waitForReplicas(1, timeout)
                .build();
    }

    private static ClaimRequest request(String id) {
        return new ClaimRequest(id, "fp-" + id);
    }

    @Test
    @Order(1)
    void aConsumerOnEverySlotClaimsCompletesAndIsADuplicateAfter() {
        String base = "slots-" + UUID.randomUUID();
        // One consumer per slot: names are tried in turn, each takes the first slot it hashes to.
        String[] bySlot = new String[SlotHash.SLOT_COUNT];
        int covered = 0;
        for (int i = 0; covered < SlotHash.SLOT_COUNT; i++) {
            String name = base + "-" + i;
            int slot = SlotHash.getSlot(name.getBytes(StandardCharsets.UTF_8));
            if (bySlot[slot] == null) {
                bySlot[slot] = name;
                covered++;
            }
        }
        RedisProcessedMessageStore store = store();
        try {
            Set<Integer> masters = new HashSet<>();
            for (int slot = 0; slot < SlotHash.SLOT_COUNT; slot++) {
                List<ClaimResult> claimed = store.claimAll(bySlot[slot], List.of(request("a"), request("b")), LEASE);
                assertThat(claimed).extracting(ClaimResult::outcome).containsOnly(ClaimOutcome.CLAIMED);
                assertThat(store.completeAll(
                                bySlot[slot], claimed.get(0).message().claimToken(), List.of("a", "b")))
                        .as("slot %d", slot)
                        .isEqualTo(2);
                if (slot % 4096 == 0) {
                    masters.add(cluster.masterOf(slot, RedisClusterFixture.FIRST_PORT));
                }
            }
            for (int slot = 0; slot < SlotHash.SLOT_COUNT; slot += 97) {
                assertThat(store.claim(bySlot[slot], request("a"), LEASE).outcome())
                        .isEqualTo(ClaimOutcome.DUPLICATE);
            }
            assertThat(masters).as("the slots are spread over the masters").hasSizeGreaterThan(1);
        } finally {
            TestRedis.deleteRows(
                    cluster.connectionFactory(), TestRedis.PREFIX, store, List.of(bySlot), List.of("a", "b"));
        }
    }

    /** 8 threads race batch claims of overlapping ids of 3 consumers (so 3 slots, likely 3 masters): each id is claimed once. */
    @Test
    @Order(2)
    void batchClaimsRacedFromThreadsClaimEveryIdExactlyOnce() throws Exception {
        List<String> consumers =
                List.of("race-" + UUID.randomUUID(), "race-" + UUID.randomUUID(), "race-" + UUID.randomUUID());
        RedisProcessedMessageStore store = store();
        int threads = 8;
        int ids = 200;
        Map<String, AtomicInteger> claims = new ConcurrentHashMap<>();
        CountDownLatch start = new CountDownLatch(1);
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<?>> futures = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int offset = t;
                futures.add(pool.submit(() -> {
                    start.await();
                    for (int from = 0; from < ids; from += 10) {
                        for (String consumer : consumers) {
                            List<ClaimRequest> batch = new ArrayList<>();
                            for (int i = 0; i < 20; i++) {
                                batch.add(request("m-" + ((from + i + offset * 7) % ids)));
                            }
                            for (ClaimResult result : store.claimAll(consumer, batch, LEASE)) {
                                if (result.outcome() == ClaimOutcome.CLAIMED
                                        && result.message().attempts() == 1) {
                                    claims.computeIfAbsent(
                                                    consumer + "/"
                                                            + result.message().messageId(),
                                                    key -> new AtomicInteger())
                                            .incrementAndGet();
                                }
                            }
                        }
                    }
                    return null;
                }));
            }
            start.countDown();
            for (Future<?> future : futures) {
                future.get(2, TimeUnit.MINUTES);
            }
        } finally {
            pool.shutdownNow();
            for (String consumer : consumers) {
                TestRedis.deleteRows(cluster.connectionFactory(), TestRedis.PREFIX, consumer);
            }
        }
        assertThat(claims).hasSize(consumers.size() * ids);
        assertThat(claims.values()).allSatisfy(count -> assertThat(count).hasValue(1));
    }

    /**
     * The master of the consumer's slot is killed while a worker claims and completes with
     * {@code WAIT 1}; its replica takes over. Every completion the store acknowledged (WAIT said a
     * replica has it) is still a duplicate afterwards; writes during the failover fail and are
     * retried by redelivery, never acknowledged falsely.
     */
    @Test
    @Order(10)
    void aMasterKilledMidRunLosesNoCompletionThatWaitOneAcknowledged() throws Exception {
        String consumer = "failover-" + UUID.randomUUID();
        int slot = SlotHash.getSlot(consumer.getBytes(StandardCharsets.UTF_8));
        int master = cluster.masterOf(slot, RedisClusterFixture.FIRST_PORT);
        int replica = cluster.replicaOf(master);
        int witness = otherNode(master, replica);
        RedisProcessedMessageStore store = waitingStore(Duration.ofSeconds(1));
        List<String> acknowledged = new ArrayList<>();
        AtomicInteger failures = new AtomicInteger();
        AtomicBoolean stop = new AtomicBoolean();
        AtomicInteger afterFailover = new AtomicInteger();
        AtomicBoolean failedOver = new AtomicBoolean();
        ExecutorService worker = Executors.newSingleThreadExecutor();
        try {
            Future<?> run = worker.submit(() -> {
                for (int i = 0; i < 100_000 && !stop.get(); i++) {
                    String id = "m-" + i;
                    try {
                        ClaimResult claim = store.claim(consumer, request(id), LEASE);
                        if (claim.outcome() == ClaimOutcome.CLAIMED && store.complete(claim.message())) {
                            synchronized (acknowledged) {
                                acknowledged.add(id);
                            }
                            if (failedOver.get()) {
                                afterFailover.incrementAndGet();
                            }
                        }
                    } catch (RuntimeException ex) {
                        failures.incrementAndGet(); // the failover window: the message would be redelivered
                    }
                }
            });
            await().atMost(Duration.ofSeconds(30)).until(() -> {
                synchronized (acknowledged) {
                    return acknowledged.size() >= 50;
                }
            });

            cluster.kill(master);
            await().atMost(Duration.ofSeconds(60))
                    .pollInterval(Duration.ofMillis(200))
                    .ignoreExceptions() // no master for the slot while the failover runs
                    .until(() -> cluster.masterOf(slot, witness) == replica);
            // The new master has no replica until the killed node comes back as one: till then every
            // write fails its WAIT 1, and none is acknowledged.
            failedOver.set(true);
            cluster.restart(master);
            await().atMost(Duration.ofSeconds(60)).until(() -> afterFailover.get() >= 50);
            stop.set(true);
            run.get(1, TimeUnit.MINUTES);

            RedisProcessedMessageStore reader = store();
            await().atMost(Duration.ofSeconds(30))
                    .ignoreExceptions() // until the client follows the new topology
                    .until(() -> reader.find(consumer, "m-0").isPresent());
            List<String> all;
            synchronized (acknowledged) {
                all = List.copyOf(acknowledged);
            }
            for (String id : all) {
                assertThat(reader.claim(consumer, request(id), LEASE).outcome())
                        .as("%s was acknowledged before or after the failover", id)
                        .isEqualTo(ClaimOutcome.DUPLICATE);
            }
        } finally {
            stop.set(true);
            worker.shutdownNow();
            cluster.restart(master);
            TestRedis.deleteRows(cluster.connectionFactory(), TestRedis.PREFIX, consumer);
        }
    }

    /**
     * What is lost without {@code WAIT}: the replica is cut off (SIGSTOP and its link closed), a completion succeeds on
     * the master alone, the master dies and the replica takes over: the completion is gone, and the
     * message is claimed again (its handler runs twice). With {@code WAIT 1} the same completion is
     * refused ({@link RedisLedgerReplicationException}): the caller is never told "done" for a write
     * no replica has.
     */
    @Test
    @Order(11)
    void withoutWaitACompletionOnlyTheMasterHadIsLostAtFailoverWithWaitItIsRefused() {
        String consumer = "lost-" + UUID.randomUUID();
        int slot = SlotHash.getSlot(consumer.getBytes(StandardCharsets.UTF_8));
        int master = cluster.masterOf(slot, RedisClusterFixture.FIRST_PORT);
        int replica = cluster.replicaOf(master);
        int witness = otherNode(master, replica);
        RedisProcessedMessageStore plain = store();
        RedisProcessedMessageStore waiting = waitingStore(Duration.ofMillis(300));
        ClaimResult kept = plain.claim(consumer, request("kept"), LEASE);
        assertThat(waiting.complete(kept.message())).as("replicated").isTrue();
        ClaimResult lost = plain.claim(consumer, request("lost"), LEASE);
        ClaimResult refused = plain.claim(consumer, request("refused"), LEASE);
        try {
            // Cut the replica off: stopped, and its link closed by the master (what was sent before
            // is in its socket buffer and arrives; nothing after does).
            cluster.signal(replica, "STOP");
            assertThat(cluster.cli(master, "client", "kill", "type", "replica")).contains("1");
            assertThat(plain.complete(lost.message()))
                    .as("acknowledged by the master alone")
                    .isTrue();
            assertThatThrownBy(() -> waiting.complete(refused.message()))
                    .isInstanceOf(RedisLedgerReplicationException.class);

            cluster.kill(master);
            cluster.signal(replica, "CONT");
            await().atMost(Duration.ofSeconds(60))
                    .pollInterval(Duration.ofMillis(200))
                    .ignoreExceptions() // no master for the slot while the failover runs
                    .until(() -> cluster.masterOf(slot, witness) == replica);

            await().atMost(Duration.ofSeconds(30))
                    .ignoreExceptions() // until the client follows the new topology
                    .until(() -> plain.find(consumer, "kept").isPresent());
            assertThat(plain.claim(consumer, request("kept"), LEASE).outcome())
                    .as("WAIT 1 acknowledged it: the replica has it")
                    .isEqualTo(ClaimOutcome.DUPLICATE);
            ClaimResult again = plain.claim(consumer, request("lost"), LEASE);
            assertThat(again.outcome())
                    .as("the completion never reached the replica: the message runs again")
                    .isIn(ClaimOutcome.BUSY, ClaimOutcome.CLAIMED);
            assertThat(again.message().status()).isEqualTo(io.sumi.store.MessageStatus.IN_PROGRESS);
        } finally {
            cluster.signal(replica, "CONT");
            cluster.restart(master);
            TestRedis.deleteRows(cluster.connectionFactory(), TestRedis.PREFIX, consumer);
        }
    }

    private static int otherNode(int... not) {
        outer:
        for (int port = RedisClusterFixture.FIRST_PORT;
                port < RedisClusterFixture.FIRST_PORT + RedisClusterFixture.NODES;
                port++) {
            for (int n : not) {
                if (n == port) {
                    continue outer;
                }
            }
            return port;
        }
        throw new IllegalStateException("no other node");
    }
}
