package io.sumi.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sumi.store.jdbc.JdbcProcessedMessageStore;
import io.sumi.testing.CountingStore;
import io.sumi.testing.LedgerTime;
import io.sumi.testing.MutableClock;
import io.sumi.testing.TestDatabase;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.List;
import java.util.stream.IntStream;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The pruner deletes completed rows older than the retention, batch by batch, by the injected
 * clock. It runs on an H2 database of its own: pruning is not scoped to one namespace, so a shared
 * ledger would let other tests' rows into the counts. The ledger writes its times with the
 * database's clock, so time passes for the rows by ageing them ({@link LedgerTime#ageAll}); the
 * pruner's clock stays at the real "now" unless a test is about that clock.
 */
class LedgerPrunerTests {

    private static final Duration LEASE = Duration.ofMinutes(5);

    private final MutableClock clock = new MutableClock(Instant.now());
    private DataSource dataSource;
    private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    private JdbcTemplate jdbc;
    private JdbcProcessedMessageStore store;
    private CountingStore counting;

    @BeforeEach
    void setUp() {
        dataSource = TestDatabase.privateH2();
        jdbc = new JdbcTemplate(dataSource);
        store = JdbcProcessedMessageStore.builder(dataSource).clock(clock).build();
        counting = new CountingStore(store);
    }

    @AfterEach
    void dropDatabase() {
        jdbc.execute("SHUTDOWN");
    }

    /** Completes {@code count} messages now, in one namespace. */
    private void complete(String consumer, int count) {
        List<ClaimRequest> requests = IntStream.range(0, count)
                .mapToObj(i -> new ClaimRequest(consumer + "-" + i, null))
                .toList();
        List<ClaimResult> claims = store.claimAll(consumer, requests, LEASE);
        store.completeAll(
                consumer,
                claims.get(0).message().claimToken(),
                requests.stream().map(ClaimRequest::messageId).toList());
    }

    /** As if {@code duration} had passed for every row of the ledger. */
    private void age(Duration duration) {
        LedgerTime.ageAll(dataSource, duration);
    }

    private int rows(String status) {
        Integer count =
                jdbc.queryForObject("SELECT COUNT(*) FROM processed_messages WHERE status = ?", Integer.class, status);
        return count == null ? 0 : count;
    }

    private LedgerPruner.Builder pruner() {
        return LedgerPruner.builder(counting).clock(clock).meterRegistry(meters).retention(Duration.ofDays(14));
    }

    @Test
    void deletesCompletedRowsOlderThanTheRetentionInBoundedBatches() {
        complete("mail", 3);
        complete("charge", 2);
        // In progress with a lease that runs past the cutoff: a live claim, never pruned (however old).
        store.claim("mail", new ClaimRequest("stuck", null), Duration.ofDays(30));
        age(Duration.ofDays(10));
        complete("recent", 3);
        age(Duration.ofDays(5));
        Instant cutoff = clock.instant().minus(Duration.ofDays(14));

        int deleted = pruner().batchSize(2).build().prune();

        assertThat(deleted).isEqualTo(5);
        assertThat(counting.prunes)
                .containsExactly(
                        new CountingStore.Prune(cutoff, 2, 2),
                        new CountingStore.Prune(cutoff, 2, 2),
                        new CountingStore.Prune(cutoff, 2, 1));
        assertThat(rows("COMPLETED")).isEqualTo(3);
        assertThat(rows("IN_PROGRESS")).isEqualTo(1);
        assertThat(meters.get("sumi.ledger.pruned").counter().count()).isEqualTo(5.0);
    }

    @Test
    void claimsReleasedLongAgoAndNeverTakenAgainArePrunedToo() {
        store.release(
                store.claim("mail", new ClaimRequest("dead-lettered", null), LEASE)
                        .message(),
                "poison");
        age(Duration.ofDays(15));

        assertThat(pruner().build().prune()).isEqualTo(1);
        assertThat(rows("IN_PROGRESS")).isZero();
    }

    @Test
    void rowsWithinTheRetentionAreKeptUpToTheCutoff() {
        complete("mail", 2);
        Instant cutoff = clock.instant().minus(Duration.ofDays(14));
        jdbc.update("UPDATE processed_messages SET processed_at = ?", OffsetDateTime.ofInstant(cutoff, ZoneOffset.UTC));

        assertThat(pruner().build().prune())
                .as("processed exactly at the cutoff: kept")
                .isZero();

        jdbc.update(
                "UPDATE processed_messages SET processed_at = ?",
                OffsetDateTime.ofInstant(cutoff.minus(Duration.ofNanos(1000)), ZoneOffset.UTC));
        assertThat(pruner().build().prune()).isEqualTo(2);
        assertThat(rows("COMPLETED")).isZero();
    }

    @Test
    void aFullLastBatchNeedsOneMoreShortBatchToKnowItIsDone() {
        complete("mail", 4);
        age(Duration.ofDays(15));

        int deleted = pruner().batchSize(2).build().prune();

        assertThat(deleted).isEqualTo(4);
        assertThat(counting.prunes).extracting(CountingStore.Prune::deleted).containsExactly(2, 2, 0);
    }

    @Test
    void maxBatchesBoundsOneRunAndTheNextRunGoesOn() {
        complete("mail", 5);
        age(Duration.ofDays(15));
        LedgerPruner pruner = pruner().batchSize(2).maxBatches(2).build();

        assertThat(pruner.prune()).isEqualTo(4);
        assertThat(counting.prunes).hasSize(2);
        assertThat(pruner.prune()).isEqualTo(1);
        assertThat(rows("COMPLETED")).isZero();
    }

    @Test
    void retentionIsMeasuredByTheInjectedClock() {
        complete("mail", 1);

        assertThat(pruner().retention(Duration.ofHours(1)).build().prune()).isZero();
        clock.advance(Duration.ofHours(2));
        assertThat(pruner().retention(Duration.ofHours(1)).build().prune()).isEqualTo(1);
    }

    @Test
    void nothingToPruneIsOneCheapQuery() {
        assertThat(pruner().build().prune()).isZero();
        assertThat(counting.prunes).hasSize(1);
    }

    @Test
    void defaultsAreFourteenDaysInBatchesOfAThousand() {
        LedgerPruner pruner = LedgerPruner.builder(counting).clock(clock).build();
        complete("mail", 1);
        // A minute past the retention, not a second: the test's clock was read when the test was
        // built, before the migration, and on a loaded machine the row is completed seconds later
        // by the database's clock (a one-second margin failed so).
        age(Duration.ofDays(14).plusMinutes(1));

        assertThat(pruner.retention()).isEqualTo(Duration.ofDays(14)).isEqualTo(LedgerPruner.DEFAULT_RETENTION);
        assertThat(pruner.prune()).isEqualTo(1);
        assertThat(counting.prunes)
                .singleElement()
                .extracting(CountingStore.Prune::limit)
                .isEqualTo(LedgerPruner.DEFAULT_BATCH_SIZE);
    }

    @Test
    void invalidSettingsAreRejected() {
        LedgerPruner.Builder builder = LedgerPruner.builder(counting);

        assertThatIllegalArgumentException()
                .isThrownBy(() -> builder.retention(Duration.ZERO))
                .withMessageContaining("retention");
        assertThatIllegalArgumentException().isThrownBy(() -> builder.retention(Duration.ofDays(-1)));
        assertThatIllegalArgumentException()
                .isThrownBy(() -> builder.batchSize(0))
                .withMessageContaining("batch size");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> builder.maxBatches(0))
                .withMessageContaining("max batches");
    }
}
