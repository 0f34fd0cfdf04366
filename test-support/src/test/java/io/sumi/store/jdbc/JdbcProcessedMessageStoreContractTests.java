package io.sumi.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;
import static org.assertj.core.api.Assertions.within;

import io.sumi.store.CachingProcessedMessageStore;
import io.sumi.store.ClaimOutcome;
import io.sumi.store.ClaimResult;
import io.sumi.store.MessageStatus;
import io.sumi.store.ProcessedMessage;
import io.sumi.store.ProcessedMessageStore;
import io.sumi.store.ProcessedMessageStoreContract;
import io.sumi.testing.LedgerTime;
import io.sumi.testing.Race;
import io.sumi.testing.TestDatabase;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.EnumSource;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.DelegatingDataSource;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The JDBC ledger's contract, run on each database (the class's parameter): the store-neutral
 * suite ({@link ProcessedMessageStoreContract}) plus what only the JDBC ledger offers, namely
 * transactional mode, pruning, the renewal DataSource and the table name.
 *
 * <p>Every ledger time comes from the database's clock, so tests move time by ageing their rows
 * ({@link LedgerTime#age}) or by leases short enough to expire for real.
 */
@ParameterizedClass
@EnumSource(TestDatabase.class)
class JdbcProcessedMessageStoreContractTests extends ProcessedMessageStoreContract {

    DataSource dataSource;
    TransactionTemplate transactions;

    /** The database, the class's parameter: each test runs on every database the source above names. */
    @Parameter
    TestDatabase database;

    @Override
    protected ProcessedMessageStore newStore(Clock clock) {
        return JdbcProcessedMessageStore.builder(database.dataSource())
                .clock(clock)
                .build();
    }

    @Override
    protected void age(String consumer, Duration duration) {
        LedgerTime.age(database.dataSource(), consumer, duration);
    }

    @Override
    protected void deleteRows(String consumer) {
        new JdbcTemplate(database.dataSource()).update("DELETE FROM processed_messages WHERE consumer = ?", consumer);
    }

    @BeforeEach
    void setUpJdbc() {
        dataSource = database.dataSource();
        transactions = new TransactionTemplate(new DataSourceTransactionManager(dataSource));
    }

    @Test
    void transactionalClaimCommitsWithTheTransaction() {
        ClaimResult result = transactions.execute(status -> store.claimCompleted(consumer, request("t1")));

        assertThat(result.outcome()).isEqualTo(ClaimOutcome.CLAIMED);
        assertThat(result.message().status()).isEqualTo(MessageStatus.COMPLETED);
        assertThat(result.message().processedAt())
                .as("the database's clock")
                .isCloseTo(Instant.now(), within(1, ChronoUnit.MINUTES));
        ClaimResult again = transactions.execute(status -> store.claimCompleted(consumer, request("t1")));
        assertThat(again.outcome()).isEqualTo(ClaimOutcome.DUPLICATE);
        assertThat(store.claim(consumer, request("t1"), LEASE).outcome()).isEqualTo(ClaimOutcome.DUPLICATE);
    }

    @Test
    void transactionalClaimRolledBackLeavesNoRow() {
        transactions.executeWithoutResult(status -> {
            assertThat(store.claimCompleted(consumer, request("t1")).outcome()).isEqualTo(ClaimOutcome.CLAIMED);
            status.setRollbackOnly();
        });

        assertThat(store.find(consumer, "t1")).isEmpty();
        ClaimResult retry = transactions.execute(status -> store.claimCompleted(consumer, request("t1")));
        assertThat(retry.outcome()).isEqualTo(ClaimOutcome.CLAIMED);
    }

    @Test
    void transactionalBatchClaimSeesCompletedAndLiveRows() {
        store.complete(store.claim(consumer, request("done"), LEASE).message());
        store.claim(consumer, request("held"), LEASE);
        ClaimResult expired = store.claim(consumer, request("expired"), Duration.ofSeconds(1));
        age(Duration.ofSeconds(2));

        List<ClaimResult> results = transactions.execute(status -> store.claimAllCompleted(
                consumer, List.of(request("new"), request("done"), request("held"), request("expired"))));

        assertThat(results)
                .extracting(ClaimResult::outcome)
                .containsExactly(ClaimOutcome.CLAIMED, ClaimOutcome.DUPLICATE, ClaimOutcome.BUSY, ClaimOutcome.CLAIMED);
        assertThat(results.get(3).message().status()).isEqualTo(MessageStatus.COMPLETED);
        assertThat(results.get(3).message().attempts())
                .isEqualTo(expired.message().attempts() + 1);
    }

    @Test
    void transactionalClaimOutsideATransactionIsRefused() {
        assertThatIllegalStateException()
                .isThrownBy(() -> store.claimCompleted(consumer, request("t1")))
                .withMessageContaining("transaction");
        assertThat(store.find(consumer, "t1")).isEmpty();
    }

    @Test
    void tableNamesThatAreNotIdentifiersAreRejected() {
        assertThatIllegalArgumentException()
                .isThrownBy(() ->
                        JdbcProcessedMessageStore.builder(dataSource).tableName("processed_messages; DROP TABLE x"))
                .withMessageContaining("Invalid ledger table name");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> JdbcProcessedMessageStore.builder(dataSource).tableName("1abc"));
        assertThat(JdbcProcessedMessageStore.validateTableName("sumi.processed_messages"))
                .isEqualTo("sumi.processed_messages");
    }

    @Test
    void pruningDeletesOldCompletedAndAbandonedRowsInBoundedBatches() {
        // Rows of this test are aged 30 years, so the cutoff below cannot reach other tests' rows.
        Duration thirtyYears = Duration.ofDays(30 * 365);
        List<String> ids = IntStream.range(0, 25).mapToObj(i -> "old-" + i).toList();
        List<ClaimResult> old = store.claimAll(
                consumer,
                ids.stream().map(ProcessedMessageStoreContract::request).toList(),
                LEASE);
        store.completeAll(consumer, old.get(0).message().claimToken(), ids);
        // Failed, released and never taken again (a dead-lettered message): done with, too.
        store.release(store.claim(consumer, request("old-abandoned"), LEASE).message(), "poison");
        // A claim whose lease still runs past the cutoff is live and stays.
        store.claim(consumer, request("old-live"), Duration.ofDays(30));
        age(thirtyYears);
        store.complete(store.claim(consumer, request("recent"), LEASE).message());
        store.release(store.claim(consumer, request("recent-failed"), LEASE).message(), "boom");
        Instant cutoff = Instant.now().minus(thirtyYears).plus(Duration.ofDays(14));

        assertThat(store.deleteCompletedBefore(cutoff, 10)).isEqualTo(10);
        assertThat(store.deleteCompletedBefore(cutoff, 10)).isEqualTo(10);
        assertThat(store.deleteCompletedBefore(cutoff, 10)).isEqualTo(6);
        assertThat(store.deleteCompletedBefore(cutoff, 10)).isZero();

        assertThat(store.find(consumer, "old-abandoned")).isEmpty();
        assertThat(store.find(consumer, "old-live")).isPresent();
        assertThat(store.find(consumer, "recent")).isPresent();
        assertThat(store.find(consumer, "recent-failed")).isPresent();
        assertThat(ids).allSatisfy(id -> assertThat(store.find(consumer, id)).isEmpty());
    }

    @Test
    void concurrentTransactionalClaimsOfOneKeyCommitExactlyOnce() throws Exception {
        int threads = 8;
        List<ClaimOutcome> outcomes = Race.of(
                threads,
                () -> transactions.execute(status ->
                        store.claimCompleted(consumer, request("tx-race")).outcome()));
        assertThat(outcomes)
                .filteredOn(outcome -> outcome == ClaimOutcome.CLAIMED)
                .hasSize(1);
        assertThat(outcomes)
                .filteredOn(outcome -> outcome == ClaimOutcome.DUPLICATE)
                .hasSize(threads - 1);
    }

    @Test
    void cacheRemembersOnlyCommittedCompletions() {
        CachingProcessedMessageStore cached = new CachingProcessedMessageStore(store, 1000, Duration.ofHours(1));
        transactions.executeWithoutResult(status -> {
            cached.claimCompleted(consumer, request("rolled-back"));
            status.setRollbackOnly();
        });
        transactions.executeWithoutResult(status -> cached.claimCompleted(consumer, request("committed")));
        cached.complete(cached.claim(consumer, request("leased"), LEASE).message());
        assertThat(cached.size()).isEqualTo(2);

        // With the rows gone from the database, only the cache can answer DUPLICATE.
        new JdbcTemplate(dataSource).update("DELETE FROM processed_messages WHERE consumer = ?", consumer);
        assertThat(cached.claim(consumer, request("committed"), LEASE).outcome())
                .isEqualTo(ClaimOutcome.DUPLICATE);
        assertThat(cached.claim(consumer, request("leased"), LEASE).outcome()).isEqualTo(ClaimOutcome.DUPLICATE);
        assertThat(cached.claim(consumer, request("rolled-back"), LEASE).outcome())
                .isEqualTo(ClaimOutcome.CLAIMED);
    }

    // ---------------------------------------------------------------- the cache remembers only what is committed

    @Test
    void cacheDoesNotRememberADuplicateOfTheCallersOwnRolledBackClaim() {
        CachingProcessedMessageStore cached = new CachingProcessedMessageStore(store, 1000, Duration.ofHours(1));
        transactions.executeWithoutResult(status -> {
            assertThat(cached.claimCompleted(consumer, request("k")).outcome()).isEqualTo(ClaimOutcome.CLAIMED);
            // The caller's own uncommitted row: a duplicate for this transaction only.
            assertThat(cached.claimCompleted(consumer, request("k")).outcome()).isEqualTo(ClaimOutcome.DUPLICATE);
            assertThat(cached.claimAllCompleted(consumer, List.of(request("k"))))
                    .extracting(ClaimResult::outcome)
                    .containsExactly(ClaimOutcome.DUPLICATE);
            status.setRollbackOnly();
        });

        assertThat(store.find(consumer, "k")).isEmpty();
        assertThat(cached.size()).isZero();
        assertThat(cached.claim(consumer, request("k"), LEASE).outcome()).isEqualTo(ClaimOutcome.CLAIMED);
    }

    @Test
    void cacheRemembersATransactionalDuplicateOnlyOnceItsTransactionCommitted() {
        CachingProcessedMessageStore cached = new CachingProcessedMessageStore(store, 1000, Duration.ofHours(1));
        store.complete(store.claim(consumer, request("done"), LEASE).message());
        transactions.executeWithoutResult(status -> {
            assertThat(cached.claimCompleted(consumer, request("done")).outcome())
                    .isEqualTo(ClaimOutcome.DUPLICATE);
            assertThat(cached.size()).as("not before the commit").isZero();
        });
        assertThat(cached.size()).isOne();

        new JdbcTemplate(dataSource).update("DELETE FROM processed_messages WHERE consumer = ?", consumer);
        assertThat(cached.claim(consumer, request("done"), LEASE).outcome()).isEqualTo(ClaimOutcome.DUPLICATE);
    }

    @Test
    void pruningNeverDeletesALiveClaimWhateverTheCutoff() {
        ClaimResult live = store.claim(consumer, request("live"), LEASE);
        store.release(store.claim(consumer, request("released"), LEASE).message(), "poison");

        // A pruner whose clock runs far ahead computes a cutoff past the live lease (this also
        // prunes other tests' finished rows: they are done with).
        Instant cutoff = Instant.now().plus(Duration.ofDays(1));
        while (store.deleteCompletedBefore(cutoff, 1000) == 1000) {
            // next batch
        }

        assertThat(store.find(consumer, "live")).isPresent();
        assertThat(store.find(consumer, "released")).isEmpty();
        assertThat(store.complete(live.message())).isTrue();
    }

    /** Issue 19 A14: renewals must not queue behind the application's work on the ledger's pool. */
    @Test
    void renewalsTakeTheirConnectionFromTheRenewalDataSourceWhenOneIsSet() {
        CountingDataSource ledger = new CountingDataSource(dataSource);
        CountingDataSource renewals = new CountingDataSource(dataSource);
        JdbcProcessedMessageStore split = JdbcProcessedMessageStore.builder(ledger)
                .renewalDataSource(renewals)
                .build();
        List<ClaimResult> claimed = split.claimAll(consumer, List.of(request("a"), request("b")), LEASE);
        int ledgerConnections = ledger.connections.get();
        age(LEASE.minusSeconds(30));

        assertThat(split.renewAll(consumer, claimed.get(0).message().claimToken(), List.of("a", "b"), LEASE))
                .isEqualTo(2);

        assertThat(renewals.connections).as("the renewal's connection").hasValue(1);
        assertThat(ledger.connections).as("none from the ledger's").hasValue(ledgerConnections);
        age(LEASE.minusSeconds(30));
        assertThat(store.claim(consumer, request("a"), LEASE).outcome()).isEqualTo(ClaimOutcome.BUSY);
        assertThat(split.completeAll(consumer, claimed.get(0).message().claimToken(), List.of("a", "b")))
                .isEqualTo(2);
        assertThat(renewals.connections).as("completions use the ledger's").hasValue(1);
    }

    /** Counts the connections taken from a DataSource. */
    static final class CountingDataSource extends DelegatingDataSource {
        final AtomicInteger connections = new AtomicInteger();

        CountingDataSource(DataSource target) {
            super(target);
        }

        @Override
        public Connection getConnection() throws SQLException {
            connections.incrementAndGet();
            return super.getConnection();
        }
    }

    @Test
    void aTransactionalModeReplyCommitsWithItsRowAndRollsBackWithIt() {
        transactions.executeWithoutResult(status -> {
            ClaimResult claim = store.claimCompleted(consumer, request("t1"));
            assertThat(store.storeReply(claim.message(), reply("committed"))).isTrue();
        });
        transactions.executeWithoutResult(status -> {
            ClaimResult claim = store.claimCompleted(consumer, request("t2"));
            assertThat(store.storeReply(claim.message(), reply("rolled back"))).isTrue();
            status.setRollbackOnly();
        });

        assertThat(store.findReply(consumer, "t1")).contains(reply("committed"));
        assertThat(store.find(consumer, "t2")).isEmpty();
        assertThat(store.findReply(consumer, "t2")).isEmpty();
        ClaimResult duplicate = transactions.execute(status -> store.claimCompleted(consumer, request("t1")));
        assertThat(duplicate.outcome()).isEqualTo(ClaimOutcome.DUPLICATE);
        ProcessedMessage row = duplicate.message();
        ProcessedMessage otherClaim = new ProcessedMessage(
                row.consumer(),
                row.messageId(),
                row.status(),
                row.claimToken() + 1,
                null,
                row.attempts(),
                row.fingerprint(),
                null,
                row.firstSeenAt(),
                row.processedAt());
        assertThat((Boolean) transactions.execute(status -> store.storeReply(otherClaim, reply("x"))))
                .as("fenced on the claim token: only the claim that wrote the row adds its reply")
                .isFalse();
        assertThat(store.findReply(consumer, "t1")).contains(reply("committed"));
    }

    @Test
    void storingATransactionalReplyOutsideATransactionIsRefused() {
        ClaimResult claim = store.claim(consumer, request("t1"), LEASE);
        assertThatIllegalStateException().isThrownBy(() -> store.storeReply(claim.message(), reply("x")));
    }

    @Test
    void pruningARowRemovesItsReply() {
        store.complete(store.claim(consumer, request("old"), LEASE).message(), reply("old reply"));
        age(Duration.ofDays(30 * 365));
        store.complete(store.claim(consumer, request("recent"), LEASE).message(), reply("recent reply"));
        Instant cutoff = Instant.now().minus(Duration.ofDays(30 * 365)).plus(Duration.ofDays(14));

        assertThat(store.deleteCompletedBefore(cutoff, 1000)).isEqualTo(1);

        assertThat(store.findReply(consumer, "old")).isEmpty();
        assertThat(new JdbcTemplate(dataSource)
                        .queryForObject(
                                "SELECT COUNT(*) FROM processed_messages WHERE consumer = ? AND reply IS NOT NULL",
                                Integer.class,
                                consumer))
                .isEqualTo(1);
        assertThat(store.findReply(consumer, "recent")).contains(reply("recent reply"));
    }

    // ---------------------------------------------------------------- transactional parts of the shared cases

    @Test
    void aRowMarkedForReconciliationIsBusyForATransactionalClaimToo() {
        ClaimResult claim = store.claim(consumer, request("m1"), LEASE);
        assertThat(store.markForReconciliation(claim.message(), "uncertain outcome"))
                .isTrue();

        ClaimResult transactional = transactions.execute(status -> store.claimCompleted(consumer, request("m1")));

        assertThat(transactional.outcome()).isEqualTo(ClaimOutcome.BUSY);
        assertThat(transactional.message().status()).isEqualTo(MessageStatus.RECONCILE);
    }

    @Test
    void aTransactionalBatchClaimOfKeysThatAllExistAnswersFromTheirRows() {
        List<ClaimResult> first = store.claimAll(consumer, List.of(request("a"), request("b"), request("c")), LEASE);
        store.completeAll(consumer, first.get(0).message().claimToken(), List.of("a", "c"));

        List<ClaimResult> transactional = transactions.execute(
                status -> store.claimAllCompleted(consumer, List.of(request("a"), request("b"), request("c"))));

        assertThat(transactional)
                .extracting(ClaimResult::outcome)
                .containsExactly(ClaimOutcome.DUPLICATE, ClaimOutcome.BUSY, ClaimOutcome.DUPLICATE);
        assertThat(store.find(consumer, "b").orElseThrow().attempts())
                .as("a busy answer changes nothing")
                .isEqualTo(1);
    }

    @Test
    void transactionalClaimsOfKeysThatDifferOnlyInTrailingSpacesAreDistinct() {
        List<ClaimResult> transactional =
                transactions.execute(status -> store.claimAllCompleted(consumer, List.of(request("t"), request("t "))));

        assertThat(transactional).extracting(ClaimResult::outcome).containsOnly(ClaimOutcome.CLAIMED);
    }

    @Test
    void aTransactionalClaimOfAKeyWithANulCharacterIsRejected() {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> transactions.execute(status -> store.claimCompleted(consumer, request("k\u0000"))));
    }

    @Test
    void aTransactionalClaimByAStoreWhoseClockRunsAheadDoesNotTakeOverALiveLease() {
        ProcessedMessageStore fast = storeWithClock(Duration.ofMinutes(10));
        ClaimResult held = storeWithClock(Duration.ZERO).claim(consumer, request("m1"), LEASE);

        assertThat(transactions
                        .execute(status -> fast.claimCompleted(consumer, request("m1")))
                        .outcome())
                .isEqualTo(ClaimOutcome.BUSY);
        assertThat(store.complete(held.message())).isTrue();
    }
}
