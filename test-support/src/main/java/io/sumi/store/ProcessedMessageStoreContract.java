package io.sumi.store;

import static java.util.Objects.requireNonNull;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.within;
import static org.awaitility.Awaitility.await;

import io.sumi.testing.Race;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The contract every Sumi ledger keeps, whatever it stores rows in: run against each store by a
 * subclass of its own (the JDBC ledger's is a {@code @ParameterizedClass} over the databases; the
 * Redis ledger's run standalone and on a cluster).
 * Each test uses a consumer namespace of its own, so tests never see each other's rows.
 *
 * <p>Every ledger time comes from the store's shared clock (the database's, the Redis server's),
 * so tests move time by ageing their rows ({@link #age(String, Duration)}) or by leases short
 * enough to expire for real. Transactional mode, pruning and the JDBC store's own settings are in
 * the JDBC suite ({@code JdbcProcessedMessageStoreContractTests}).
 */
public abstract class ProcessedMessageStoreContract {

    protected static final Duration LEASE = Duration.ofMinutes(5);

    /** The store's own clock runs a day behind: nothing the ledger writes or decides may depend on it. */
    protected final Clock clock = Clock.offset(Clock.systemUTC(), Duration.ofDays(-1));

    protected ProcessedMessageStore store;
    protected String consumer;

    /** A store on the suite's ledger whose own clock (where it has one) is {@code clock}. */
    protected abstract ProcessedMessageStore newStore(Clock clock);

    /**
     * As if {@code duration} had passed for every row of {@code consumer}: every stored time moved
     * back by it (leases, first claims, completions, and whatever index the store keeps of them).
     */
    protected abstract void age(String consumer, Duration duration);

    /** Deletes every row of {@code consumer}, behind the store's back. */
    protected abstract void deleteRows(String consumer);

    @BeforeEach
    void setUpStore() {
        store = newStore(clock);
        consumer = "contract-" + UUID.randomUUID();
    }

    @AfterEach
    void deleteTheTestsRows() {
        deleteRows(consumer);
    }

    /** As if {@code duration} had passed for every row of this test's namespace. */
    protected void age(Duration duration) {
        age(consumer, duration);
    }

    protected static ClaimRequest request(String id) {
        return new ClaimRequest(id, id.length() > 40 ? "fp-long" : "fp-" + id);
    }

    @Test
    void firstClaimOfANewKeyIsClaimed() {
        ClaimResult result = store.claim(consumer, request("m1"), LEASE);

        assertThat(result.outcome()).isEqualTo(ClaimOutcome.CLAIMED);
        ProcessedMessage row = result.message();
        assertThat(row.status()).isEqualTo(MessageStatus.IN_PROGRESS);
        assertThat(row.attempts()).isEqualTo(1);
        assertThat(row.fingerprint()).isEqualTo("fp-m1");
        assertThat(row.firstSeenAt())
                .as("the database's clock")
                .isCloseTo(Instant.now(), within(1, ChronoUnit.MINUTES));
        assertThat(row.leaseUntil()).isEqualTo(row.firstSeenAt().plus(LEASE));
        assertThat(row.processedAt()).isNull();
        assertThat(store.find(consumer, "m1")).contains(row);
    }

    @Test
    void secondClaimWhileTheLeaseIsLiveIsBusyAndReturnsTheHoldersRow() {
        ClaimResult first = store.claim(consumer, request("m1"), LEASE);
        age(LEASE.minusSeconds(30));

        ClaimResult second = store.claim(consumer, request("m1"), LEASE);

        assertThat(second.outcome()).isEqualTo(ClaimOutcome.BUSY);
        assertThat(second.message().claimToken()).isEqualTo(first.message().claimToken());
        assertThat(second.message().attempts()).isEqualTo(1);
    }

    @Test
    void claimAfterTheLeaseExpiredTakesTheMessageOver() {
        ClaimResult first = store.claim(consumer, request("m1"), LEASE);
        age(LEASE);

        ClaimResult second = store.claim(consumer, request("m1"), LEASE);

        assertThat(second.outcome()).isEqualTo(ClaimOutcome.CLAIMED);
        assertThat(second.message().attempts()).isEqualTo(2);
        assertThat(second.message().claimToken()).isNotEqualTo(first.message().claimToken());
        assertThat(second.message().leaseUntil()).isCloseTo(Instant.now().plus(LEASE), within(1, ChronoUnit.MINUTES));
        assertThat(second.message().firstSeenAt())
                .isEqualTo(first.message().firstSeenAt().minus(LEASE));
        // The first owner lost its lease: it can neither complete nor release the new claim.
        assertThat(store.complete(first.message())).isFalse();
        assertThat(store.release(first.message(), "late")).isFalse();
        assertThat(store.complete(second.message())).isTrue();
    }

    @Test
    void claimAfterCompletionIsADuplicateWithTheCompletedRow() {
        ClaimResult first = store.claim(consumer, request("m1"), LEASE);
        assertThat(store.complete(first.message())).isTrue();
        age(LEASE.multipliedBy(10));

        ClaimResult again = store.claim(consumer, new ClaimRequest("m1", "other"), LEASE);

        assertThat(again.outcome()).isEqualTo(ClaimOutcome.DUPLICATE);
        assertThat(again.message().status()).isEqualTo(MessageStatus.COMPLETED);
        assertThat(again.message().fingerprint()).isEqualTo("fp-m1");
        assertThat(again.message().processedAt())
                .isBetween(
                        again.message().firstSeenAt(),
                        first.message()
                                .firstSeenAt()
                                .minus(LEASE.multipliedBy(10))
                                .plus(Duration.ofMinutes(1)));
        assertThat(again.message().leaseUntil()).isNull();
    }

    @Test
    void releaseEndsTheLeaseNowAndKeepsTheError() {
        ClaimResult first = store.claim(consumer, request("m1"), LEASE);

        assertThat(store.release(first.message(), "SMTP 451")).isTrue();
        ClaimResult retry = store.claim(consumer, request("m1"), LEASE);

        assertThat(retry.outcome()).isEqualTo(ClaimOutcome.CLAIMED);
        assertThat(retry.message().attempts()).isEqualTo(2);
        assertThat(retry.message().lastError()).isEqualTo("SMTP 451");
        assertThat(store.complete(retry.message())).isTrue();
        assertThat(store.find(consumer, "m1")).get().satisfies(row -> {
            assertThat(row.status()).isEqualTo(MessageStatus.COMPLETED);
            assertThat(row.lastError()).isNull();
        });
    }

    @Test
    void aRowMarkedForReconciliationIsNeverClaimedAgainNorPruned() {
        ClaimResult first = store.claim(consumer, request("m1"), LEASE);
        age(LEASE);
        ClaimResult takeover = store.claim(consumer, request("m1"), LEASE);

        assertThat(store.markForReconciliation(first.message(), "stale")).isFalse();
        assertThat(store.markForReconciliation(takeover.message(), "uncertain outcome"))
                .isTrue();
        age(LEASE.multipliedBy(10));

        ClaimResult lease = store.claim(consumer, request("m1"), LEASE);
        assertThat(lease.outcome()).isEqualTo(ClaimOutcome.BUSY);
        assertThat(lease.message().status()).isEqualTo(MessageStatus.RECONCILE);
        assertThat(lease.message().lastError()).isEqualTo("uncertain outcome");
        assertThat(lease.message().leaseUntil()).isNull();
        assertThat(lease.message().attempts()).isEqualTo(2);
        assertThat(store.complete(takeover.message())).isFalse();
        assertThat(store.release(takeover.message(), "late")).isFalse();
        assertThat(store.deleteCompletedBefore(Instant.now().plus(Duration.ofDays(365)), 1000))
                .isGreaterThanOrEqualTo(0);
        assertThat(store.find(consumer, "m1"))
                .get()
                .extracting(ProcessedMessage::status)
                .isEqualTo(MessageStatus.RECONCILE);
    }

    /** The ledger gauges' source: live claims only (not ended leases, not completed rows), held rows counted. */
    @Test
    void consumerStatsGiveTheOldestLiveClaimAndTheRowsHeldForReconciliation() {
        String other = consumer + "-b";
        try {
            ClaimResult expired = store.claim(consumer, request("expired"), LEASE);
            ClaimResult done = store.claim(consumer, request("done"), LEASE);
            assertThat(store.complete(done.message())).isTrue();
            ClaimResult held = store.claim(consumer, request("held"), LEASE);
            assertThat(store.markForReconciliation(held.message(), "uncertain")).isTrue();
            age(LEASE.plusMinutes(5)); // "expired" ended its lease 5 minutes ago; the rest is 10 minutes old
            store.claim(consumer, request("live"), LEASE);
            ClaimResult released = store.claim(consumer, request("released"), LEASE);
            age(Duration.ofMinutes(2)); // "live" was first claimed 2 minutes ago
            assertThat(store.release(released.message(), "failed")).isTrue();
            store.claim(consumer, request("fresh"), LEASE);
            store.claim(other, request("x"), LEASE);
            assertThat(expired.message().leaseUntil()).isNotNull();

            var stats = store.consumerStats();

            assertThat(requireNonNull(stats.get(consumer)).oldestLiveClaimAge())
                    .as("the live claim first claimed 2 minutes ago; the ended lease and the completed row are older")
                    .isBetween(Duration.ofMinutes(2), Duration.ofMinutes(2).plusSeconds(30));
            assertThat(requireNonNull(stats.get(consumer)).heldForReconciliation())
                    .isEqualTo(1);
            assertThat(requireNonNull(stats.get(other)).oldestLiveClaimAge()).isLessThan(Duration.ofSeconds(30));
            assertThat(requireNonNull(stats.get(other)).heldForReconciliation()).isZero();
            assertThat(stats).doesNotContainKey(consumer + "-idle");
            var throughCache = requireNonNull(new CachingProcessedMessageStore(store, 10, Duration.ofHours(1))
                    .consumerStats()
                    .get(consumer));
            assertThat(throughCache.heldForReconciliation())
                    .as("the cache forwards")
                    .isEqualTo(1);
            assertThat(throughCache.oldestLiveClaimAge()).isGreaterThanOrEqualTo(Duration.ofMinutes(2));

            // Nothing live any more: the consumer is reported for its held row alone, with age 0.
            age(LEASE.multipliedBy(2));
            assertThat(store.consumerStats().get(consumer))
                    .isEqualTo(new io.sumi.store.ConsumerLedgerStats(consumer, Duration.ZERO, 1));
        } finally {
            deleteRows(other);
        }
    }

    @Test
    void anOperatorResolvesAReconciliationAsDoneOrForARetry() {
        ClaimResult done = store.claim(consumer, request("done"), LEASE);
        ClaimResult retry = store.claim(consumer, request("retry"), LEASE);
        ClaimResult live = store.claim(consumer, request("live"), LEASE);
        assertThat(store.markForReconciliation(done.message(), "uncertain")).isTrue();
        assertThat(store.markForReconciliation(retry.message(), "uncertain")).isTrue();

        // Only RECONCILE rows are resolved: a live claim and an unknown key are left alone.
        assertThat(store.completeReconciled(consumer, "live")).isFalse();
        assertThat(store.releaseReconciled(consumer, "live")).isFalse();
        assertThat(store.completeReconciled(consumer, "unknown")).isFalse();
        assertThat(store.find(consumer, "live")).get().isEqualTo(live.message());

        assertThat(store.completeReconciled(consumer, "done")).isTrue();
        assertThat(store.completeReconciled(consumer, "done")).isFalse();
        assertThat(store.claim(consumer, request("done"), LEASE).outcome()).isEqualTo(ClaimOutcome.DUPLICATE);
        assertThat(store.find(consumer, "done")).get().satisfies(row -> {
            assertThat(row.status()).isEqualTo(MessageStatus.COMPLETED);
            assertThat(row.processedAt()).isNotNull();
            assertThat(row.leaseUntil()).isNull();
        });

        assertThat(store.releaseReconciled(consumer, "retry")).isTrue();
        assertThat(store.find(consumer, "retry")).isEmpty();
        ClaimResult again = store.claim(consumer, request("retry"), LEASE);
        assertThat(again.outcome()).isEqualTo(ClaimOutcome.CLAIMED);
        assertThat(again.message().attempts()).isEqualTo(1);
    }

    @Test
    void longErrorsAreCutToTheColumn() {
        ClaimResult first = store.claim(consumer, request("m1"), LEASE);
        assertThat(store.release(first.message(), "x".repeat(5000))).isTrue();
        assertThat(store.find(consumer, "m1"))
                .get()
                .extracting(ProcessedMessage::lastError)
                .asString()
                .hasSize(1000);
    }

    /**
     * Error texts {@code last_error} cannot hold as they are: a NUL byte (PostgreSQL refuses it in
     * any text column), a 4-byte character (a MariaDB {@code utf8mb3} column refuses it), and a text
     * far longer than the column with a surrogate pair across the cut.
     */
    static List<String> unstorableErrors() {
        return List.of(
                "java.lang.IllegalStateException: reply held a NUL byte \u0000 here",
                "java.lang.IllegalStateException: broker said \uD83D\uDE00 no",
                "x".repeat(999) + "\uD83D\uDE00".repeat(10) + "y".repeat(5000));
    }

    /** Issue 19 A9: a release whose error text the column refuses must still end the lease now, not after it. */
    @ParameterizedTest
    @MethodSource("unstorableErrors")
    void aReleaseWithAnErrorTextTheColumnCannotHoldReleasesAtOnce(String error) {
        assertReleaseWithUnstorableErrorReleasesAtOnce(store, consumer, error, true);
    }

    /**
     * A release of {@code consumer}'s claim with {@code error} ends the lease at once; the stored
     * text is what the column can hold ({@code textKept}) or none. Static for the tests of a store
     * of their own (a legacy table on one database).
     */
    public static void assertReleaseWithUnstorableErrorReleasesAtOnce(
            ProcessedMessageStore onStore, String consumer, String error, boolean textKept) {
        ClaimResult first = onStore.claim(consumer, request("m1"), LEASE);

        assertThat(onStore.release(first.message(), error)).isTrue();
        ClaimResult retry = onStore.claim(consumer, request("m1"), LEASE);

        assertThat(retry.outcome()).as("claimable at once").isEqualTo(ClaimOutcome.CLAIMED);
        assertThat(retry.message().attempts()).isEqualTo(2);
        String stored = retry.message().lastError();
        if (textKept) {
            assertThat(stored).isNotNull().startsWith(error.substring(0, 20)).doesNotContain("\u0000");
            assertThat(requireNonNull(stored).codePointCount(0, stored.length()))
                    .isLessThanOrEqualTo(1000);
        } else {
            assertThat(stored).isNull();
        }
    }

    @Test
    void batchClaimReturnsOneResultPerRequestInOrder() {
        ClaimResult done = store.claim(consumer, request("done"), LEASE);
        store.complete(done.message());
        ClaimResult held = store.claim(consumer, request("held"), LEASE);

        List<ClaimResult> results = store.claimAll(
                consumer,
                List.of(request("new-b"), request("done"), request("held"), request("new-a"), request("new-b")),
                LEASE);

        assertThat(results)
                .extracting(ClaimResult::outcome)
                .containsExactly(
                        ClaimOutcome.CLAIMED,
                        ClaimOutcome.DUPLICATE,
                        ClaimOutcome.BUSY,
                        ClaimOutcome.CLAIMED,
                        ClaimOutcome.CLAIMED);
        assertThat(results.get(0).message()).isEqualTo(results.get(4).message());
        assertThat(results.get(2).message().claimToken())
                .isEqualTo(held.message().claimToken());
        long token = results.get(0).message().claimToken();
        assertThat(results.get(3).message().claimToken()).isEqualTo(token);
        assertThat(store.completeAll(consumer, token, List.of("new-a", "new-b")))
                .isEqualTo(2);
        assertThat(store.claimAll(consumer, List.of(request("new-a"), request("new-b")), LEASE))
                .extracting(ClaimResult::outcome)
                .containsOnly(ClaimOutcome.DUPLICATE);
    }

    @Test
    void batchClaimTakesOverExpiredLeasesAndReturnsTheHoldersRowsOfTheOthers() {
        ClaimResult done = store.claim(consumer, request("done"), LEASE);
        store.complete(done.message());
        ClaimResult expired = store.claim(consumer, request("expired"), Duration.ofSeconds(1));
        ClaimResult held = store.claim(consumer, request("held"), LEASE);
        age(Duration.ofSeconds(2));

        List<ClaimResult> results = store.claimAll(
                consumer, List.of(request("held"), request("expired"), request("new"), request("done")), LEASE);

        assertThat(results)
                .extracting(ClaimResult::outcome)
                .containsExactly(ClaimOutcome.BUSY, ClaimOutcome.CLAIMED, ClaimOutcome.CLAIMED, ClaimOutcome.DUPLICATE);
        long token = results.get(2).message().claimToken();
        assertThat(results.get(0).message()).as("the holder's row, untouched").satisfies(row -> {
            assertThat(row.claimToken()).isEqualTo(held.message().claimToken());
            assertThat(row.attempts()).isEqualTo(1);
            assertThat(row.status()).isEqualTo(MessageStatus.IN_PROGRESS);
        });
        assertThat(results.get(1).message())
                .as("taken over with this batch's token")
                .satisfies(row -> {
                    assertThat(row.claimToken())
                            .isEqualTo(token)
                            .isNotEqualTo(expired.message().claimToken());
                    assertThat(row.attempts()).isEqualTo(2);
                    assertThat(row.leaseUntil()).isCloseTo(Instant.now().plus(LEASE), within(1, ChronoUnit.MINUTES));
                });
        assertThat(results.get(3).message()).as("the completed row").satisfies(row -> {
            assertThat(row.claimToken()).isEqualTo(done.message().claimToken());
            assertThat(row.status()).isEqualTo(MessageStatus.COMPLETED);
            assertThat(row.fingerprint()).isEqualTo("fp-done");
        });
        assertThat(store.complete(expired.message()))
                .as("the first holder lost it")
                .isFalse();
        assertThat(store.completeAll(consumer, token, List.of("expired", "new", "held", "done")))
                .as("only the batch's own claims")
                .isEqualTo(2);
    }

    @Test
    void batchClaimOfKeysThatAllExistAlreadyAnswersFromTheirRows() {
        List<ClaimResult> first = store.claimAll(consumer, List.of(request("a"), request("b"), request("c")), LEASE);
        long token = first.get(0).message().claimToken();
        store.completeAll(consumer, token, List.of("a", "c"));

        List<ClaimResult> again = store.claimAll(consumer, List.of(request("c"), request("b"), request("a")), LEASE);

        assertThat(again)
                .extracting(ClaimResult::outcome)
                .containsExactly(ClaimOutcome.DUPLICATE, ClaimOutcome.BUSY, ClaimOutcome.DUPLICATE);
        assertThat(again).extracting(result -> result.message().claimToken()).containsOnly(token);
        assertThat(again).extracting(result -> result.message().messageId()).containsExactly("c", "b", "a");
        assertThat(store.find(consumer, "b").orElseThrow().attempts())
                .as("a busy answer changes nothing")
                .isEqualTo(1);
    }

    @Test
    void batchReleaseLetsEveryKeyBeClaimedAgain() {
        List<ClaimResult> results = store.claimAll(consumer, List.of(request("a"), request("b"), request("c")), LEASE);
        long token = results.get(0).message().claimToken();

        assertThat(store.releaseAll(consumer, token, List.of("a", "b", "c"), "boom"))
                .isEqualTo(3);

        assertThat(store.claimAll(consumer, List.of(request("a"), request("b"), request("c")), LEASE))
                .allSatisfy(result -> {
                    assertThat(result.outcome()).isEqualTo(ClaimOutcome.CLAIMED);
                    assertThat(result.message().attempts()).isEqualTo(2);
                });
    }

    // ---------------------------------------------------------------- claims given back unrun (issue 19, A1)

    @Test
    void aReleaseOfAnUnrunClaimOfANewKeyLeavesNoRowAndCountsNoAttempt() {
        ClaimResult first = store.claim(consumer, request("u1"), LEASE);

        assertThat(store.releaseUnrun(consumer, first.message().claimToken(), List.of("u1")))
                .isEqualTo(1);

        assertThat(store.find(consumer, "u1")).isEmpty();
        ClaimResult again = store.claim(consumer, request("u1"), LEASE);
        assertThat(again.outcome()).isEqualTo(ClaimOutcome.CLAIMED);
        assertThat(again.message().attempts()).isEqualTo(1);
    }

    @Test
    void aReleaseOfAnUnrunTakeOverRestoresTheAttemptsTheErrorAndTheFirstClaim() {
        ClaimResult ran = store.claim(consumer, request("u2"), LEASE);
        assertThat(store.release(ran.message(), "SMTP 451")).isTrue(); // a real attempt that failed
        age(Duration.ofHours(2));
        Instant firstSeen = store.find(consumer, "u2").orElseThrow().firstSeenAt();
        ClaimResult takeover = store.claim(consumer, request("u2"), LEASE);
        assertThat(takeover.message().attempts()).isEqualTo(2);

        assertThat(store.releaseUnrun(consumer, takeover.message().claimToken(), List.of("u2")))
                .isEqualTo(1);

        assertThat(store.find(consumer, "u2")).get().satisfies(row -> {
            assertThat(row.status()).isEqualTo(MessageStatus.IN_PROGRESS);
            assertThat(row.attempts()).isEqualTo(1);
            assertThat(row.lastError()).isEqualTo("SMTP 451");
            assertThat(row.firstSeenAt()).isEqualTo(firstSeen);
        });
        // Its lease ended: the next delivery takes it over at once, as the second attempt.
        ClaimResult next = store.claim(consumer, request("u2"), LEASE);
        assertThat(next.outcome()).isEqualTo(ClaimOutcome.CLAIMED);
        assertThat(next.message().attempts()).isEqualTo(2);
    }

    @Test
    void claimsGivenBackUnrunAgainAndAgainNeverCountAnAttempt() {
        List<ClaimRequest> poll = List.of(request("p1"), request("p2"), request("p3"));
        ClaimResult failed = store.claim(consumer, request("p3"), LEASE);
        store.release(failed.message(), "boom"); // p3 ran once and failed
        for (int round = 0; round < 5; round++) {
            List<ClaimResult> results = store.claimAll(consumer, poll, LEASE);
            assertThat(results)
                    .allSatisfy(result -> assertThat(result.outcome()).isEqualTo(ClaimOutcome.CLAIMED));
            assertThat(store.releaseUnrun(consumer, results.get(0).message().claimToken(), List.of("p1", "p2", "p3")))
                    .isEqualTo(3);
        }

        assertThat(store.claimAll(consumer, poll, LEASE))
                .extracting(result -> result.message().attempts())
                .containsExactly(1, 1, 2);
    }

    @Test
    void aReleaseOfAnUnrunClaimIsAppliedOnceAndIsFencedOnItsToken() {
        ClaimResult ran = store.claim(consumer, request("u3"), LEASE);
        store.release(ran.message(), "boom");
        ClaimResult takeover = store.claim(consumer, request("u3"), LEASE);
        long token = takeover.message().claimToken();
        assertThat(store.releaseUnrun(consumer, token, List.of("u3"))).isEqualTo(1);

        // A retry (the first call's answer was lost) matches nothing: the row was handed back under another token.
        assertThat(store.releaseUnrun(consumer, token, List.of("u3"))).isZero();
        assertThat(store.find(consumer, "u3"))
                .get()
                .extracting(ProcessedMessage::attempts)
                .isEqualTo(1);

        // A claim lost to a take-over is not the loser's to give back.
        ClaimResult mine = store.claim(consumer, request("u4"), LEASE);
        age(LEASE.plusMinutes(1));
        ClaimResult taker = store.claim(consumer, request("u4"), LEASE);
        assertThat(taker.outcome()).isEqualTo(ClaimOutcome.CLAIMED);
        assertThat(store.releaseUnrun(consumer, mine.message().claimToken(), List.of("u4")))
                .isZero();
        assertThat(store.find(consumer, "u4")).get().satisfies(row -> {
            assertThat(row.attempts()).isEqualTo(2);
            assertThat(row.claimToken()).isEqualTo(taker.message().claimToken());
            assertThat(row.leaseUntil()).isEqualTo(taker.message().leaseUntil());
        });
    }

    @Test
    void aReleaseOfAnUnrunClaimDoesNotTouchACompletedRow() {
        ClaimResult first = store.claim(consumer, request("u5"), LEASE);
        store.complete(first.message());

        assertThat(store.releaseUnrun(consumer, first.message().claimToken(), List.of("u5")))
                .isZero();
        assertThat(store.find(consumer, "u5"))
                .get()
                .extracting(ProcessedMessage::status)
                .isEqualTo(MessageStatus.COMPLETED);
    }

    @Test
    void keysLongerThanTheColumnAreRejectedNotTruncated() {
        String longKey = "k".repeat(store.maxKeyLength() + 1);
        assertThatIllegalArgumentException()
                .isThrownBy(() -> store.claim(consumer, request(longKey), LEASE))
                .withMessageContaining("201 characters")
                .withMessageContaining("not truncated");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> store.claim(consumer, request(""), LEASE))
                .withMessageContaining("empty");
        String longest = "k".repeat(store.maxKeyLength());
        assertThat(store.claim(consumer, request(longest), LEASE).message().messageId())
                .isEqualTo(longest);
    }

    @Test
    void unicodeKeysRoundTrip() {
        String key = "注文-42-é-🎉";
        assertThat(store.claim(consumer, request(key), LEASE).outcome()).isEqualTo(ClaimOutcome.CLAIMED);
        assertThat(store.claim(consumer, request(key), LEASE).outcome()).isEqualTo(ClaimOutcome.BUSY);
        assertThat(store.find(consumer, key)).isPresent();
    }

    @Test
    void concurrentClaimsOfOneKeyLetExactlyOneThreadIn() throws Exception {
        int threads = 8;
        for (int round = 0; round < 20; round++) {
            String key = "race-" + round;
            List<ClaimOutcome> outcomes = Race.of(
                    threads, () -> store.claim(consumer, request(key), LEASE).outcome());
            assertThat(outcomes)
                    .filteredOn(outcome -> outcome == ClaimOutcome.CLAIMED)
                    .hasSize(1);
            assertThat(outcomes)
                    .filteredOn(outcome -> outcome == ClaimOutcome.BUSY)
                    .hasSize(threads - 1);
        }
    }

    // ---------------------------------------------------------------- keys are stored losslessly

    @Test
    void keysThatDifferOnlyInTrailingSpacesAreDistinctKeys() {
        ClaimResult plain = store.claim(consumer, request("k"), LEASE);
        ClaimResult spaced = store.claim(consumer, request("k "), LEASE);
        ClaimResult twoSpaces = store.claim(consumer, request("k  "), LEASE);

        assertThat(List.of(plain, spaced, twoSpaces))
                .extracting(ClaimResult::outcome)
                .containsOnly(ClaimOutcome.CLAIMED);
        assertThat(spaced.message().messageId()).isEqualTo("k ");
        assertThat(store.find(consumer, "k "))
                .get()
                .extracting(ProcessedMessage::claimToken)
                .isEqualTo(spaced.message().claimToken());
        assertThat(store.complete(spaced.message())).isTrue();
        assertThat(store.claim(consumer, request("k"), LEASE).outcome()).isEqualTo(ClaimOutcome.BUSY);
        assertThat(store.claim(consumer, request("k "), LEASE).outcome()).isEqualTo(ClaimOutcome.DUPLICATE);
        assertThat(store.claimAll(consumer, List.of(request("k"), request("k "), request("k  ")), LEASE))
                .extracting(ClaimResult::outcome)
                .containsExactly(ClaimOutcome.BUSY, ClaimOutcome.DUPLICATE, ClaimOutcome.BUSY);
        // Consumer names too.
        assertThat(store.claim(consumer + " ", request("k"), LEASE).outcome()).isEqualTo(ClaimOutcome.CLAIMED);
        deleteRows(consumer + " ");
    }

    @Test
    void aKeyWithANulCharacterIsRejectedClearlyNotStored() {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> store.claim(consumer, request("k\u0000x"), LEASE))
                .withMessageContaining("NUL")
                .withMessageContaining("position 1");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> store.claim("c\u0000", request("k"), LEASE))
                .withMessageContaining("consumer");
        assertThat(store.find(consumer, "k")).isEmpty();
    }

    @Test
    void aKeyThatIsNotValidUnicodeIsRejectedNotMangled() {
        // A lone surrogate would be written as '?' by the drivers: two keys would become one.
        assertThatIllegalArgumentException()
                .isThrownBy(() -> store.claim(consumer, request("k\uD800"), LEASE))
                .withMessageContaining("surrogate");
        assertThatIllegalArgumentException().isThrownBy(() -> store.claim(consumer, request("\uDC00k"), LEASE));
        assertThat(store.claim(consumer, request("k?"), LEASE).outcome()).isEqualTo(ClaimOutcome.CLAIMED);
    }

    @Test
    void keysOf200MultibyteCharactersRoundTrip() {
        List<String> keys = List.of("é".repeat(200), "注".repeat(200), "🎉".repeat(100), "é".repeat(199) + " ");
        for (String key : keys) {
            ClaimResult claim = store.claim(consumer, new ClaimRequest(key, "fp"), LEASE);
            assertThat(claim.outcome()).as(key).isEqualTo(ClaimOutcome.CLAIMED);
            assertThat(claim.message().messageId()).isEqualTo(key);
            assertThat(store.find(consumer, key))
                    .get()
                    .extracting(ProcessedMessage::messageId)
                    .isEqualTo(key);
            assertThat(store.complete(claim.message())).isTrue();
        }
        assertThat(store.claimAll(
                        consumer,
                        keys.stream().map(key -> new ClaimRequest(key, "fp")).toList(),
                        LEASE))
                .extracting(ClaimResult::outcome)
                .containsOnly(ClaimOutcome.DUPLICATE);
        String longConsumer = "消".repeat(200);
        try {
            assertThat(store.claim(longConsumer, request("k"), LEASE).message().consumer())
                    .isEqualTo(longConsumer);
        } finally {
            deleteRows(longConsumer);
        }
    }

    // ---------------------------------------------------------------- lease decisions use the database's clock

    /** A second store on the same ledger whose own clock is {@code offset} off the real one. */
    protected ProcessedMessageStore storeWithClock(Duration offset) {
        return newStore(Clock.offset(Clock.systemUTC(), offset));
    }

    @Test
    void aStoreWhoseClockRunsAheadDoesNotTakeOverALiveLease() {
        ProcessedMessageStore fast = storeWithClock(Duration.ofMinutes(10));
        ClaimResult held = storeWithClock(Duration.ZERO).claim(consumer, request("m1"), LEASE);

        assertThat(fast.claim(consumer, request("m1"), LEASE).outcome()).isEqualTo(ClaimOutcome.BUSY);
        assertThat(fast.claimAll(consumer, List.of(request("m1"), request("m2")), LEASE))
                .extracting(ClaimResult::outcome)
                .containsExactly(ClaimOutcome.BUSY, ClaimOutcome.CLAIMED);
        assertThat(store.complete(held.message())).isTrue();
    }

    @Test
    void aStoreWhoseClockRunsBehindTakesOverAnExpiredLease() {
        ProcessedMessageStore slow = storeWithClock(Duration.ofMinutes(-10));
        ClaimResult first = storeWithClock(Duration.ZERO).claim(consumer, request("m1"), Duration.ofSeconds(1));

        await().atMost(Duration.ofSeconds(10))
                .untilAsserted(() -> assertThat(
                                slow.claim(consumer, request("m1"), LEASE).outcome())
                        .isEqualTo(ClaimOutcome.CLAIMED));
        assertThat(store.complete(first.message()))
                .as("fenced: the lease was taken over")
                .isFalse();
    }

    @Test
    void aLeaseEndsWhenTheDatabaseSaysSoWhateverTheHoldersClock() {
        // The holder's clock runs 10 minutes behind: its 5-minute lease must not reach 5 minutes past the database's
        // now.
        ClaimResult held = storeWithClock(Duration.ofMinutes(-10)).claim(consumer, request("m1"), LEASE);
        assertThat(held.message().leaseUntil()).isCloseTo(Instant.now().plus(LEASE), within(1, ChronoUnit.MINUTES));
        age(LEASE.minusSeconds(30));
        assertThat(store.claim(consumer, request("m1"), LEASE).outcome()).isEqualTo(ClaimOutcome.BUSY);
        age(Duration.ofSeconds(30));
        assertThat(store.claim(consumer, request("m1"), LEASE).outcome()).isEqualTo(ClaimOutcome.CLAIMED);
    }

    @Test
    void aReleaseByAStoreWhoseClockRunsAheadLetsOthersClaimAtOnce() {
        ProcessedMessageStore fast = storeWithClock(Duration.ofMinutes(10));
        ClaimResult held = fast.claim(consumer, request("m1"), LEASE);

        assertThat(fast.release(held.message(), "SMTP 451")).isTrue();

        assertThat(storeWithClock(Duration.ZERO)
                        .claim(consumer, request("m1"), LEASE)
                        .outcome())
                .isEqualTo(ClaimOutcome.CLAIMED);
    }

    @Test
    void completionTimesComeFromTheDatabasesClock() {
        ProcessedMessageStore fast = storeWithClock(Duration.ofDays(30));
        ClaimResult held = fast.claim(consumer, request("m1"), LEASE);
        assertThat(fast.complete(held.message())).isTrue();
        ProcessedMessage row = store.find(consumer, "m1").orElseThrow();

        assertThat(row.processedAt()).isCloseTo(Instant.now(), within(1, ChronoUnit.MINUTES));
        assertThat(row.firstSeenAt()).isCloseTo(Instant.now(), within(1, ChronoUnit.MINUTES));
    }

    // ---------------------------------------------------------------- lease renewal

    @Test
    void renewalExtendsALiveLeaseFromTheDatabasesNow() {
        ClaimResult held = storeWithClock(Duration.ofMinutes(-10)).claim(consumer, request("m1"), LEASE);
        age(LEASE.minusSeconds(30));

        assertThat(storeWithClock(Duration.ofMinutes(-10)).renew(held.message(), LEASE))
                .isTrue();

        ProcessedMessage row = store.find(consumer, "m1").orElseThrow();
        assertThat(row.leaseUntil())
                .as("the database's now plus the lease, whatever the renewing store's clock")
                .isCloseTo(Instant.now().plus(LEASE), within(1, ChronoUnit.MINUTES));
        assertThat(row.attempts()).isEqualTo(1);
        assertThat(row.claimToken()).isEqualTo(held.message().claimToken());
        // Without the renewal the lease would have ended here (aged 2 x (lease - 30 s) in all).
        age(LEASE.minusSeconds(30));
        assertThat(store.claim(consumer, request("m1"), LEASE).outcome()).isEqualTo(ClaimOutcome.BUSY);
        assertThat(store.complete(held.message())).isTrue();
    }

    @Test
    void renewalDoesNotTouchAClaimThatWasTakenOver() {
        ClaimResult first = store.claim(consumer, request("m1"), LEASE);
        age(LEASE);
        ClaimResult taker = store.claim(consumer, request("m1"), Duration.ofMinutes(1));
        assertThat(taker.outcome()).isEqualTo(ClaimOutcome.CLAIMED);

        assertThat(store.renew(first.message(), LEASE.multipliedBy(10))).isFalse();

        assertThat(store.find(consumer, "m1")).contains(taker.message());
    }

    @Test
    void renewalDoesNotTouchACompletedClaim() {
        ClaimResult held = store.claim(consumer, request("m1"), LEASE);
        assertThat(store.complete(held.message())).isTrue();
        ProcessedMessage completed = store.find(consumer, "m1").orElseThrow();

        assertThat(store.renew(held.message(), LEASE)).isFalse();

        assertThat(store.find(consumer, "m1")).contains(completed);
    }

    @Test
    void aClaimWhoseLeaseEndedButThatNobodyTookOverIsStillTheHoldersToRenew() {
        ClaimResult held = store.claim(consumer, request("m1"), LEASE);
        age(LEASE.plusMinutes(1));

        assertThat(store.renew(held.message(), LEASE)).isTrue();

        assertThat(store.claim(consumer, request("m1"), LEASE).outcome()).isEqualTo(ClaimOutcome.BUSY);
    }

    @Test
    void batchRenewalRenewsOnlyTheCallersLiveClaimsInOneCall() {
        List<ClaimResult> claimed = store.claimAll(consumer, List.of(request("a"), request("b"), request("c")), LEASE);
        long token = claimed.get(0).message().claimToken();
        assertThat(store.completeAll(consumer, token, List.of("a"))).isEqualTo(1);
        age(LEASE.minusSeconds(30));

        assertThat(store.renewAll(consumer, token, List.of("a", "b", "c", "never-claimed"), LEASE))
                .isEqualTo(2);
        assertThat(store.renewAll(consumer, token + 1, List.of("b", "c"), LEASE))
                .as("another token")
                .isZero();

        age(LEASE.minusSeconds(30));
        assertThat(store.claimAll(consumer, List.of(request("a"), request("b"), request("c")), LEASE))
                .extracting(ClaimResult::outcome)
                .containsExactly(ClaimOutcome.DUPLICATE, ClaimOutcome.BUSY, ClaimOutcome.BUSY);
    }

    @Test
    void renewalRefusesALeaseThatIsNotPositive() {
        ClaimResult held = store.claim(consumer, request("m1"), LEASE);

        assertThatIllegalArgumentException().isThrownBy(() -> store.renew(held.message(), Duration.ZERO));
        assertThatIllegalArgumentException().isThrownBy(() -> store.renew(held.message(), Duration.ofSeconds(-1)));
    }

    @Test
    void theCachingStorePassesRenewalThrough() {
        CachingProcessedMessageStore cached = new CachingProcessedMessageStore(store, 1000, Duration.ofHours(1));
        ClaimResult held = cached.claim(consumer, request("m1"), LEASE);
        age(LEASE.minusSeconds(30));

        assertThat(cached.renew(held.message(), LEASE)).isTrue();

        age(LEASE.minusSeconds(30));
        assertThat(cached.claim(consumer, request("m1"), LEASE).outcome()).isEqualTo(ClaimOutcome.BUSY);
        assertThat(cached.size()).as("a renewal is no completion").isZero();
    }

    // ---------------------------------------------------------------- replies (docs/replies.md)

    protected static StoredReply reply(String text) {
        return new StoredReply(
                text.getBytes(java.nio.charset.StandardCharsets.UTF_8),
                java.util.Map.of("contentType", "text/plain", "sumi-reply-kind", "text"));
    }

    @Test
    void aLeaseModeCompletionKeepsTheReplyInTheSameStatement() {
        ClaimResult claim = store.claim(consumer, request("r1"), LEASE);

        assertThat(store.complete(claim.message(), reply("pong ✓"))).isTrue();

        assertThat(store.find(consumer, "r1"))
                .get()
                .extracting(ProcessedMessage::status)
                .isEqualTo(MessageStatus.COMPLETED);
        assertThat(store.findReply(consumer, "r1")).contains(reply("pong ✓"));
        ClaimResult duplicate = store.claim(consumer, request("r1"), LEASE);
        assertThat(duplicate.outcome()).isEqualTo(ClaimOutcome.DUPLICATE);
        assertThat(store.findReply(consumer, "r1")).contains(reply("pong ✓"));
    }

    @Test
    void aCompletionWithAReplyIsFencedOnTheClaimTokenAndWritesNothingWhenTheClaimIsGone() {
        ClaimResult first = store.claim(consumer, request("r1"), LEASE);
        age(LEASE);
        ClaimResult takeover = store.claim(consumer, request("r1"), LEASE);
        assertThat(takeover.outcome()).isEqualTo(ClaimOutcome.CLAIMED);

        assertThat(store.complete(first.message(), reply("stale"))).isFalse();
        assertThat(store.findReply(consumer, "r1"))
                .as("not completed: no reply")
                .isEmpty();

        assertThat(store.complete(takeover.message(), reply("fresh"))).isTrue();
        assertThat(store.findReply(consumer, "r1")).contains(reply("fresh"));
    }

    @Test
    void aRowCompletedWithoutAReplyHasNoneAndAnInProgressRowShowsNone() {
        store.complete(store.claim(consumer, request("plain"), LEASE).message());
        store.claim(consumer, request("running"), LEASE);

        assertThat(store.findReply(consumer, "plain")).isEmpty();
        assertThat(store.findReply(consumer, "running")).isEmpty();
        assertThat(store.findReply(consumer, "absent")).isEmpty();
        assertThat(store.complete(
                        store.claim(consumer, request("null-reply"), LEASE).message(), null))
                .isTrue();
        assertThat(store.findReply(consumer, "null-reply")).isEmpty();
    }

    @Test
    void aReplyOfSixtyFourKibibytesWithBinaryBytesRoundTrips() {
        byte[] payload = new byte[64 * 1024];
        new java.util.Random(7).nextBytes(payload);
        StoredReply big = new StoredReply(payload, java.util.Map.of());
        ClaimResult claim = store.claim(consumer, request("big"), LEASE);

        assertThat(store.complete(claim.message(), big)).isTrue();

        assertThat(store.findReply(consumer, "big")).contains(big);
    }

    @Test
    void aCachedDuplicateStillFindsTheReplyInTheLedger() {
        CachingProcessedMessageStore cached = new CachingProcessedMessageStore(store, 1000, Duration.ofHours(1));
        ClaimResult claim = cached.claim(consumer, request("c1"), LEASE);
        assertThat(cached.complete(claim.message(), reply("from the ledger"))).isTrue();

        ClaimResult duplicate = cached.claim(consumer, request("c1"), LEASE);

        assertThat(duplicate.outcome()).isEqualTo(ClaimOutcome.DUPLICATE);
        assertThat(cached.size()).isEqualTo(1);
        assertThat(cached.findReply(consumer, "c1")).contains(reply("from the ledger"));
    }
}
