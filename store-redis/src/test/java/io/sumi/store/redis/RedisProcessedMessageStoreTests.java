package io.sumi.store.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.sumi.store.ClaimOutcome;
import io.sumi.store.ClaimRequest;
import io.sumi.store.ClaimResult;
import io.sumi.store.ProcessedMessage;
import io.sumi.store.StoredReply;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.RedisConnectionFactory;

/** What only the Redis ledger does: expiry instead of pruning, its key layout, WAIT, refusing transactional mode. */
class RedisProcessedMessageStoreTests {

    static final Duration LEASE = Duration.ofMinutes(5);
    static final Duration RETENTION = Duration.ofHours(1);

    RedisConnectionFactory redis;
    RedisProcessedMessageStore store;
    String consumer;

    @BeforeEach
    void setUp() {
        redis = TestRedis.standalone();
        store = RedisProcessedMessageStore.builder(redis)
                .prefix(TestRedis.PREFIX)
                .retention(RETENTION)
                .build();
        consumer = "redis-" + UUID.randomUUID();
    }

    @AfterEach
    void cleanUp() {
        TestRedis.deleteRows(redis, TestRedis.PREFIX, consumer);
    }

    static ClaimRequest request(String id) {
        return new ClaimRequest(id, "fp-" + id);
    }

    @Test
    void aClaimsRowExpiresARetentionAfterItsLeaseACompletedRowARetentionAfterItsCompletion() {
        ClaimResult claim = store.claim(consumer, request("m1"), LEASE);
        String key = store.rowKey(consumer, "m1");
        assertThat(TestRedis.pttl(redis, key))
                .as("lease + retention")
                .isBetween(
                        LEASE.plus(RETENTION).minusSeconds(10).toMillis(),
                        LEASE.plus(RETENTION).toMillis());

        assertThat(store.complete(claim.message())).isTrue();

        assertThat(TestRedis.pttl(redis, key))
                .isBetween(RETENTION.minusSeconds(10).toMillis(), RETENTION.toMillis());
    }

    @Test
    void aReleasedRowExpiresARetentionAfterTheReleaseAndAHeldRowNever() {
        ClaimResult released = store.claim(consumer, request("released"), LEASE);
        ClaimResult held = store.claim(consumer, request("held"), LEASE);

        assertThat(store.release(released.message(), "SMTP 451")).isTrue();
        assertThat(store.markForReconciliation(held.message(), "uncertain")).isTrue();

        assertThat(TestRedis.pttl(redis, store.rowKey(consumer, "released")))
                .isBetween(RETENTION.minusSeconds(10).toMillis(), RETENTION.toMillis());
        assertThat(TestRedis.pttl(redis, store.rowKey(consumer, "held")))
                .as("no expiry")
                .isEqualTo(-1);
        assertThat(store.completeReconciled(consumer, "held")).isTrue();
        assertThat(TestRedis.pttl(redis, store.rowKey(consumer, "held")))
                .isBetween(RETENTION.minusSeconds(10).toMillis(), RETENTION.toMillis());
    }

    @Test
    void aCompletedRowIsGoneWhenItsRetentionEndsAndTheMessageIsNewAgain() {
        RedisProcessedMessageStore shortLived = RedisProcessedMessageStore.builder(redis)
                .prefix(TestRedis.PREFIX)
                .retention(Duration.ofMillis(300))
                .build();
        ClaimResult claim = shortLived.claim(consumer, request("m1"), LEASE);
        assertThat(shortLived.complete(claim.message())).isTrue();
        assertThat(shortLived.claim(consumer, request("m1"), LEASE).outcome()).isEqualTo(ClaimOutcome.DUPLICATE);

        await().atMost(Duration.ofSeconds(10))
                .until(() -> shortLived.find(consumer, "m1").isEmpty());

        assertThat(shortLived.claim(consumer, request("m1"), LEASE).outcome()).isEqualTo(ClaimOutcome.CLAIMED);
        assertThat(shortLived.deleteCompletedBefore(Instant.now().plus(Duration.ofDays(1)), 100))
                .as("no pruning: expiry does it")
                .isZero();
    }

    @Test
    void everyKeyOfAConsumerCarriesItsHashTagAndBracesInNamesCannotMakeTwoKeysOne() {
        assertThat(store.rowKey("orders", "42")).isEqualTo(TestRedis.PREFIX + ":{orders}:m:42");
        assertThat(store.rowKey("a}:m:b", "c")).isNotEqualTo(store.rowKey("a", "b}:m:c"));
        assertThat(store.rowKey("a}:m:b", "c")).isEqualTo(TestRedis.PREFIX + ":{a%7D:m:b}:m:c");
        String odd = consumer + "}{%";
        try {
            ClaimResult first = store.claim(odd, request("k"), LEASE);
            assertThat(first.outcome()).isEqualTo(ClaimOutcome.CLAIMED);
            assertThat(first.message().consumer()).isEqualTo(odd);
            assertThat(store.claim(consumer, request("k"), LEASE).outcome())
                    .as("another consumer's key")
                    .isEqualTo(ClaimOutcome.CLAIMED);
            assertThat(store.complete(first.message())).isTrue();
            assertThat(store.claim(odd, request("k"), LEASE).outcome()).isEqualTo(ClaimOutcome.DUPLICATE);
        } finally {
            TestRedis.deleteRows(redis, TestRedis.PREFIX, odd);
        }
    }

    @Test
    void prefixesThatWouldMoveTheHashTagAreRejected() {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> RedisProcessedMessageStore.builder(redis).prefix("sumi:{x}"))
                .withMessageContaining("hash tag");
        assertThatIllegalArgumentException().isThrownBy(() -> RedisProcessedMessageStore.validatePrefix("a b"));
        assertThatIllegalArgumentException().isThrownBy(() -> RedisProcessedMessageStore.validatePrefix(""));
        assertThat(RedisProcessedMessageStore.validatePrefix("app-1:ledger")).isEqualTo("app-1:ledger");
    }

    @Test
    void transactionalModeIsRefusedClearly() {
        ClaimResult claim = store.claim(consumer, request("m1"), LEASE);

        assertThatIllegalStateException()
                .isThrownBy(() -> store.claimCompleted(consumer, request("t1")))
                .withMessageContaining("transactional mode")
                .withMessageContaining("lease mode");
        assertThatIllegalStateException()
                .isThrownBy(() -> store.claimAllCompleted(consumer, List.of(request("t1"), request("t2"))));
        assertThatIllegalStateException()
                .isThrownBy(() -> store.storeReply(claim.message(), new StoredReply(new byte[1], Map.of())));
        assertThat(store.find(consumer, "t1")).isEmpty();
    }

    @Test
    void aReplyLargerThanTheLimitIsRefusedAndNothingIsCompleted() {
        RedisProcessedMessageStore limited = RedisProcessedMessageStore.builder(redis)
                .prefix(TestRedis.PREFIX)
                .maxReplySize(100)
                .build();
        ClaimResult claim = limited.claim(consumer, request("m1"), LEASE);
        StoredReply fits = new StoredReply(new byte[91], Map.of()); // 9 bytes of framing: exactly 100
        StoredReply tooLarge = new StoredReply(new byte[92], Map.of());

        assertThatIllegalArgumentException()
                .isThrownBy(() -> limited.complete(claim.message(), tooLarge))
                .withMessageContaining("101 bytes")
                .withMessageContaining("at most 100");
        assertThat(limited.find(consumer, "m1").orElseThrow().isCompleted()).isFalse();
        assertThat(limited.complete(claim.message(), fits)).isTrue();
        assertThat(limited.findReply(consumer, "m1")).contains(fits);
        assertThatIllegalArgumentException()
                .isThrownBy(() -> RedisProcessedMessageStore.builder(redis).maxReplySize(16 * 1024 * 1024 + 1));
    }

    /** This machine's Redis has no replica: a write that waits for one fails, after happening on the master. */
    @Test
    void aWriteThatWaitsForAReplicaThatIsNotThereFailsAsNotReplicated() {
        RedisProcessedMessageStore waiting = RedisProcessedMessageStore.builder(redis)
                .prefix(TestRedis.PREFIX)
                .waitForReplicas(1, Duration.ofMillis(50))
                .build();

        assertThatThrownBy(() -> waiting.claim(consumer, request("m1"), LEASE))
                .isInstanceOf(RedisLedgerReplicationException.class)
                .hasMessageContaining("0 replica(s)");
        ProcessedMessage onTheMaster = store.find(consumer, "m1").orElseThrow();
        assertThat(onTheMaster.attempts()).isEqualTo(1);
        RedisProcessedMessageStore none = RedisProcessedMessageStore.builder(redis)
                .prefix(TestRedis.PREFIX)
                .waitForReplicas(0, Duration.ofMillis(50))
                .build();
        assertThat(none.claim(consumer, request("m2"), LEASE).outcome()).isEqualTo(ClaimOutcome.CLAIMED);
    }

    /** Both Redis stores' builders refuse the same bad WAIT settings, with the same words. */
    @Test
    void bothStoresRefuseANegativeReplicaCountOrATimeoutUnderAMillisecond() {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> RedisProcessedMessageStore.builder(redis).waitForReplicas(-1, Duration.ofSeconds(1)))
                .withMessage("replicas must not be negative, was -1");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> RedisSpendStore.builder(redis).waitForReplicas(-1, Duration.ofSeconds(1)))
                .withMessage("replicas must not be negative, was -1");
        assertThatIllegalArgumentException()
                .isThrownBy(
                        () -> RedisProcessedMessageStore.builder(redis).waitForReplicas(1, Duration.ofNanos(999_999)))
                .withMessageContaining("at least 1 ms");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> RedisSpendStore.builder(redis).waitForReplicas(1, Duration.ZERO))
                .withMessageContaining("at least 1 ms");
    }

    @Test
    void theScriptsAreLoadedAgainAfterTheServerForgotThem() {
        assertThat(store.claim(consumer, request("m1"), LEASE).outcome()).isEqualTo(ClaimOutcome.CLAIMED);
        try (var connection = redis.getConnection()) {
            connection.scriptingCommands().scriptFlush();
        }

        assertThat(store.claim(consumer, request("m2"), LEASE).outcome()).isEqualTo(ClaimOutcome.CLAIMED);
    }
}
