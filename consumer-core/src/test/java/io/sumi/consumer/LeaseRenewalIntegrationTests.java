package io.sumi.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sumi.consumer.exception.MessageBusyException;
import io.sumi.store.ForwardingProcessedMessageStore;
import io.sumi.store.MessageStatus;
import io.sumi.store.ProcessedMessage;
import io.sumi.store.ProcessedMessageStore;
import io.sumi.store.jdbc.JdbcProcessedMessageStore;
import io.sumi.testing.TestDatabase;
import java.sql.Connection;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongSupplier;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.parallel.Execution;
import org.junit.jupiter.api.parallel.ExecutionMode;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.EnumSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.dao.TransientDataAccessResourceException;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * Lease renewal with real threads on a real database: two "JVMs" (each its own connection pool,
 * store and executor) compete for one key while the first runs a handler for three times its
 * 1-second lease. Run on each database: the class is parameterized by it.
 *
 * <p>A JVM is "killed" in process: its executor is closed (its renewal threads stop at once) and
 * its connection pool is closed, so neither a renewal nor its completion can reach the ledger
 * again, as after {@code kill -9}; its handler thread is left blocked until the test ends.
 *
 * <p>The tests wait out real leases, so they run side by side ({@code CONCURRENT}, at most four at
 * once: {@code junit-platform.properties}): each has a consumer and pools of its own, and nothing
 * else of the module runs beside them (the class itself runs alone, as every class here).
 */
@ParameterizedClass
@EnumSource(TestDatabase.class)
class LeaseRenewalIntegrationTests {

    static final Duration LEASE = Duration.ofSeconds(1);
    static final Duration HANDLER_TIME = LEASE.multipliedBy(3);

    private static final Logger log = LoggerFactory.getLogger(LeaseRenewalIntegrationTests.class);
    private static final Timestamp LONG_AGO = Timestamp.from(Instant.parse("2000-01-01T00:00:00Z"));

    private final List<Jvm> jvms = new ArrayList<>();
    private final ExecutorService threads = Executors.newCachedThreadPool();
    private JdbcTemplate jdbc;
    private String consumer;
    private HandlerDefinition handler;

    /** The database, the class's parameter: each test runs on every database the source above names. */
    @Parameter
    TestDatabase database;

    @BeforeEach
    void setUp() {
        jdbc = new JdbcTemplate(database.dataSource()); // migrates the database
        consumer = "renewal-" + UUID.randomUUID();
        handler = HandlerDefinition.builder(consumer)
                .mode(IdempotencyMode.LEASE)
                .lease(LEASE)
                .build();
    }

    @AfterEach
    void tearDown() {
        threads.shutdownNow();
        jvms.forEach(Jvm::kill);
        jdbc.update("DELETE FROM processed_messages WHERE consumer = ?", consumer);
    }

    // ---------------------------------------------------------------- the promise

    @Test
    @Execution(ExecutionMode.CONCURRENT)
    void aHandlerRunningThreeLeasesIsNotTakenOverWhileItsJvmRenews() throws Exception {
        Jvm a = jvm(true);
        Jvm b = jvm(true);

        Contest contest = contest(a, b, "k1");

        assertThat(contest.firstResult().outcome()).isEqualTo(MessageOutcome.PROCESSED);
        assertThat(contest.runs).as("the handler ran once, on the first JVM").hasValue(1);
        assertThat(contest.busy)
                .as("the competitor was told BUSY while the handler ran")
                .hasValueGreaterThan(5);
        assertThat(contest.afterwards).isEqualTo(MessageOutcome.DUPLICATE);
        assertThat(a.renewals("renewed")).as("renewed every third of the lease").isGreaterThanOrEqualTo(4);
        assertThat(a.renewals("lost")).isZero();
        assertThat(a.count("sumi.leases.lost")).isZero();
        assertThat(row("k1").status()).isEqualTo(MessageStatus.COMPLETED);
        assertThat(row("k1").attempts()).isEqualTo(1);
    }

    /** Negative control: the same contest with renewal off ends in a takeover. */
    @Test
    @Execution(ExecutionMode.CONCURRENT)
    void withoutRenewalTheSameHandlerIsTakenOverAfterOneLease() throws Exception {
        Jvm a = jvm(false);
        Jvm b = jvm(true);

        Contest contest = contest(a, b, "k1");

        assertThat(contest.runs).as("taken over: the handler ran twice").hasValue(2);
        assertThat(a.renewals("renewed")).isZero();
        assertThat(a.count("sumi.leases.lost")).isEqualTo(1);
        assertThat(contest.firstResult().outcome())
                .as("acked: the taker completed it")
                .isEqualTo(MessageOutcome.PROCESSED);
        assertThat(row("k1").attempts()).isEqualTo(2);
    }

    @Test
    @Execution(ExecutionMode.CONCURRENT)
    void whenTheRenewingJvmDiesTheOtherTakesOverAfterOneLease() throws Exception {
        Jvm a = jvm(true);
        Jvm b = jvm(true);
        CountDownLatch started = new CountDownLatch(1);
        CountDownLatch never = new CountDownLatch(1);
        AtomicInteger runsOnB = new AtomicInteger();
        AtomicLong takenOverAt = new AtomicLong();
        Future<HandlerResult<Object>> first = threads.submit(() -> a.executor.execute(handler, message("k1"), () -> {
            started.countDown();
            never.await(); // the JVM dies inside its handler
            return "a";
        }));
        assertThat(started.await(10, TimeUnit.SECONDS)).isTrue();
        Callable<Boolean> competitor = () -> {
            try {
                b.executor.execute(handler, message("k1"), () -> {
                    takenOverAt.set(System.nanoTime());
                    return runsOnB.incrementAndGet();
                });
            } catch (MessageBusyException busy) {
                // held by a
            }
            return runsOnB.get() > 0;
        };

        // Alive and renewing: not taken over across more than two leases of renewals.
        double renewedBefore = a.renewals("renewed");
        await().atMost(LEASE.multipliedBy(10))
                .pollInterval(Duration.ofMillis(20))
                .until(() -> {
                    assertThat(competitor.call()).as("taken over while renewed").isFalse();
                    return a.renewals("renewed") >= renewedBefore + 8;
                });
        long killedAt = System.nanoTime();
        a.kill();

        await().atMost(LEASE.multipliedBy(10))
                .pollInterval(Duration.ofMillis(20))
                .until(competitor);
        assertThat(runsOnB).hasValue(1);
        long delay = TimeUnit.NANOSECONDS.toMillis(takenOverAt.get() - killedAt);
        log.info("{}: taken over {} ms after the renewing JVM died (lease {})", database, delay, LEASE);
        assertThat(delay).as("not before the JVM died").isPositive();
        assertThat(row("k1").status()).isEqualTo(MessageStatus.COMPLETED);
        assertThat(row("k1").attempts()).isEqualTo(2);
        assertThat(a.renewals("renewed")).isGreaterThanOrEqualTo(3);

        never.countDown();
        // The dead JVM's handler returns into a closed pool: it cannot complete anything.
        assertThatThrownBy(() -> first.get(10, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class);
        assertThat(row("k1").attempts()).isEqualTo(2);
    }

    @Test
    @Execution(ExecutionMode.CONCURRENT)
    void aBatchHandlerRunningThreeLeasesKeepsEveryClaim() throws Exception {
        Jvm a = jvm(true);
        Jvm b = jvm(true);
        CountDownLatch started = new CountDownLatch(1);
        Future<BatchResult> batch = threads.submit(() ->
                a.executor.executeBatch(handler, List.of(message("b1"), message("b2"), message("b3")), indexes -> {
                    started.countDown();
                    runsUntilRenewedFor(a, HANDLER_TIME, () -> false);
                }));
        assertThat(started.await(10, TimeUnit.SECONDS)).isTrue();
        AtomicInteger runsOnB = new AtomicInteger();
        AtomicInteger busy = new AtomicInteger();
        await().atMost(HANDLER_TIME.multipliedBy(5))
                .pollInterval(Duration.ofMillis(50))
                .until(() -> {
                    for (String key : List.of("b1", "b2", "b3")) {
                        try {
                            // Once the batch has completed, a duplicate (never a run).
                            b.executor.execute(handler, message(key), runsOnB::incrementAndGet);
                        } catch (MessageBusyException ex) {
                            busy.incrementAndGet();
                        }
                    }
                    return batch.isDone();
                });

        assertThat(batch.get()).isEqualTo(new BatchResult(3, 0));
        assertThat(runsOnB).as("no message of the batch was taken over").hasValue(0);
        assertThat(busy).hasValueGreaterThan(10);
        assertThat(b.executor.execute(handler, message("b2"), () -> "b").outcome())
                .isEqualTo(MessageOutcome.DUPLICATE);
        assertThat(a.renewals("renewed")).as("three claims per renewal").isGreaterThanOrEqualTo(12);
    }

    // ---------------------------------------------------------------- a poll's claims (PollClaim)

    @Test
    @Execution(ExecutionMode.CONCURRENT)
    void aPollRunningThreeLeasesKeepsEveryClaimUntilItsCompletionIsWritten() throws Exception {
        Jvm a = jvm(true);
        Jvm b = jvm(true);

        PollContest contest = pollContest(a, b);

        assertThat(contest.runsOnA).hasValue(3);
        assertThat(contest.runsOnB).as("no claim of the poll was taken over").hasValue(0);
        assertThat(contest.busy)
                .as("the competitor was told BUSY while the poll ran")
                .hasValueGreaterThan(10);
        assertThat(contest.completed).as("every completion found its claim").hasValue(3);
        for (String key : POLL) {
            assertThat(b.executor.execute(handler, message(key), () -> "late").outcome())
                    .isEqualTo(MessageOutcome.DUPLICATE);
            assertThat(row(key).attempts()).isEqualTo(1);
        }
        assertThat(a.renewals("renewed")).as("three claims per renewal").isGreaterThanOrEqualTo(12);
        assertThat(a.renewals("lost")).isZero();
        assertThat(a.count("sumi.leases.lost")).isZero();
        assertNoMoreRenewals(a); // the poll has ended
    }

    /** Negative control: the same poll with renewal off is taken over after one lease. */
    @Test
    @Execution(ExecutionMode.CONCURRENT)
    void withoutRenewalTheClaimsOfTheSamePollAreTakenOver() throws Exception {
        Jvm a = jvm(false);
        Jvm b = jvm(true);

        PollContest contest = pollContest(a, b);

        assertThat(contest.runsOnB).as("taken over while the poll ran").hasValueGreaterThan(0);
        assertThat(contest.completed).as("completions that found their claim").hasValueLessThan(3);
        assertThat(a.count("sumi.leases.lost")).isEqualTo(3 - contest.completed.get());
        assertThat(a.renewals("renewed")).isZero();
    }

    @Test
    @Execution(ExecutionMode.CONCURRENT)
    void aFailedRecordOfAPollIsFreeAtOnceWhileTheRestStaysRenewedUntilThePollEnds() throws Exception {
        Jvm a = jvm(true);
        Jvm b = jvm(true);
        CountDownLatch failed = new CountDownLatch(1);
        CountDownLatch checked = new CountDownLatch(1);
        Future<?> poll = threads.submit(() -> {
            PollClaim claim = Objects.requireNonNull(a.executor.claimPoll(handler, messages(POLL)));
            claim.execute(0, () -> {
                runsUntilRenewedFor(a, LEASE.multipliedBy(3).dividedBy(2), () -> false);
                return "a";
            });
            try {
                claim.execute(1, () -> {
                    throw new IllegalStateException("SMTP 451");
                });
            } catch (IllegalStateException expected) {
                failed.countDown();
            }
            // The container seeks the rest back; the poll ends once the test has looked.
            assertThat(checked.await(20, TimeUnit.SECONDS)).isTrue();
            claim.completePending();
            claim.releaseUnrun();
            return null;
        });
        assertThat(failed.await(20, TimeUnit.SECONDS)).isTrue();
        // More than one lease after the poll's claim: p1 (run, completion kept) and p3 (not run)
        // are still held; the failed p2 was released at once and is not renewed after.
        assertThat(b.executor.execute(handler, message("p2"), () -> "b").outcome())
                .isEqualTo(MessageOutcome.PROCESSED);
        assertThatThrownBy(() -> b.executor.execute(handler, message("p1"), () -> "b"))
                .isInstanceOf(MessageBusyException.class);
        assertThatThrownBy(() -> b.executor.execute(handler, message("p3"), () -> "b"))
                .isInstanceOf(MessageBusyException.class);
        checked.countDown();
        poll.get(20, TimeUnit.SECONDS);

        assertThat(b.executor.execute(handler, message("p1"), () -> "b").outcome())
                .isEqualTo(MessageOutcome.DUPLICATE);
        assertThat(b.executor.execute(handler, message("p3"), () -> "b").outcome())
                .as("released when the poll ended")
                .isEqualTo(MessageOutcome.PROCESSED);
        assertThat(a.renewals("lost")).isZero();
        assertNoMoreRenewals(a);
    }

    /**
     * The poll ends (its unrun claims released) while a renewal statement is in flight: the release
     * waits for it, so the renewal lands first and the release leaves the keys free. Negative
     * control (checked by hand): with {@code Renewal.close} not taking the renewal's lock, the
     * release lands first and the late renewal holds every key for another lease (BUSY here).
     */
    @Test
    @Execution(ExecutionMode.CONCURRENT)
    void aRenewalInFlightWhenThePollEndsLandsBeforeTheReleaseNotAfterIt() throws Exception {
        Jvm a = jvm(true);
        Jvm b = jvm(true);
        CountDownLatch frozen = new CountDownLatch(1);
        a.store.frozen = frozen;
        PollClaim claim = Objects.requireNonNull(a.executor.claimPoll(handler, messages(POLL)));
        // The first renewal statement is in flight (held before it reaches the ledger).
        await().atMost(Duration.ofSeconds(20)).until(() -> a.store.waiting.get() == 1);
        AtomicReference<@Nullable Thread> ending = new AtomicReference<>();
        Future<?> end = threads.submit(() -> {
            ending.set(Thread.currentThread());
            claim.releaseUnrun();
        });
        // The poll's end has released its keys, or it waits for the renewal in flight.
        await().atMost(Duration.ofSeconds(20))
                .until(() -> end.isDone()
                        || (ending.get() != null
                                && Objects.requireNonNull(ending.get()).getState() == Thread.State.WAITING));
        frozen.countDown();
        end.get(20, TimeUnit.SECONDS);
        a.store.frozen = null;
        // Had the renewal landed after the release, every key would be held for another lease.
        for (String key : POLL) {
            assertThat(b.executor.execute(handler, message(key), () -> "b").outcome())
                    .as(key)
                    .isEqualTo(MessageOutcome.PROCESSED);
        }
    }

    // ---------------------------------------------------------------- a saturated pool (issue 19 A14)

    /**
     * The application's pool (2 connections, a connection timeout of 8 leases) is held by other
     * work while a handler runs: with renewals on a pool of their own the other JVM is told BUSY
     * for three leases of renewals, and the handler completes its only run.
     */
    @Test
    @Execution(ExecutionMode.CONCURRENT)
    void aSaturatedApplicationPoolDoesNotStopRenewalsOnConnectionsOfTheirOwn() throws Exception {
        Jvm a = saturableJvm(true);
        Jvm b = jvm(true);
        CountDownLatch finish = new CountDownLatch(1);
        Future<HandlerResult<Object>> first = handlerUntil(a, "k1", finish);

        int runsOnB = contestWhileThePoolIsSaturated(a, b, List.of("k1"));

        finish.countDown();
        assertThat(runsOnB).as("the other JVM never got the key").isZero();
        assertThat(first.get(10, TimeUnit.SECONDS).outcome()).isEqualTo(MessageOutcome.PROCESSED);
        assertThat(row("k1").attempts()).as("never taken over").isEqualTo(1);
        assertThat(a.renewals("renewed")).isGreaterThanOrEqualTo(4);
    }

    /** The same for a poll's claims (the Kafka poll claim): they are renewed by the same renewer. */
    @Test
    @Execution(ExecutionMode.CONCURRENT)
    void aSaturatedApplicationPoolDoesNotStopThePollClaimsRenewals() throws Exception {
        Jvm a = saturableJvm(true);
        Jvm b = jvm(true);
        CountDownLatch claimed = new CountDownLatch(1);
        CountDownLatch finish = new CountDownLatch(1);
        AtomicInteger completed = new AtomicInteger();
        Future<?> poll = threads.submit(() -> {
            PollClaim claim = Objects.requireNonNull(a.executor.claimPoll(handler, messages(POLL)));
            claimed.countDown();
            claim.execute(0, () -> {
                finish.await();
                return "a";
            });
            completed.set(claim.completePending());
            claim.releaseUnrun();
            return null;
        });
        assertThat(claimed.await(10, TimeUnit.SECONDS)).isTrue();

        int runsOnB = contestWhileThePoolIsSaturated(a, b, POLL);

        finish.countDown();
        poll.get(20, TimeUnit.SECONDS);
        assertThat(runsOnB).as("no claim of the poll was taken over").isZero();
        assertThat(completed).as("the completion found its claim").hasValue(1);
        assertThat(row("p1").attempts()).isEqualTo(1);
        assertThat(a.renewals("lost")).isZero();
    }

    /**
     * Negative control: the same saturated pool with renewals on it. A renewal waits for a
     * connection longer than the lease, the lease lapses, and the other JVM takes the key over
     * while the handler still runs (what issue 19 A14 saw).
     */
    @Test
    @Execution(ExecutionMode.CONCURRENT)
    void renewalsQueuedBehindASaturatedApplicationPoolLetTheLeaseLapse() throws Exception {
        Jvm a = saturableJvm(false);
        Jvm b = jvm(true);
        CountDownLatch finish = new CountDownLatch(1);
        Future<HandlerResult<Object>> first = handlerUntil(a, "k1", finish);

        int runsOnB = contestWhileThePoolIsSaturated(a, b, List.of("k1"));

        finish.countDown();
        first.get(20, TimeUnit.SECONDS);
        assertThat(runsOnB).as("taken over").isEqualTo(1);
        assertThat(row("k1").attempts())
                .as("taken over while the first handler ran")
                .isEqualTo(2);
    }

    /** A JVM whose application pool has 2 connections, with renewals on a pool of their own or not. */
    private Jvm saturableJvm(boolean ownRenewalPool) {
        Jvm jvm = new Jvm(jvms.size(), true, 2, ownRenewalPool);
        jvms.add(jvm);
        return jvm;
    }

    /** Starts {@code jvm}'s handler for {@code key}, which runs until {@code finish} opens; returns once it runs. */
    private Future<HandlerResult<Object>> handlerUntil(Jvm jvm, String key, CountDownLatch finish)
            throws InterruptedException {
        CountDownLatch running = new CountDownLatch(1);
        Future<HandlerResult<Object>> run = threads.submit(() -> jvm.executor.execute(handler, message(key), () -> {
            running.countDown();
            finish.await();
            return "a";
        }));
        assertThat(running.await(10, TimeUnit.SECONDS)).isTrue();
        return run;
    }

    /**
     * Saturates {@code a}'s application pool (its claims taken), then {@code b} receives
     * {@code keys} every 50 ms until it has run one of them (taken over) or {@code a} has renewed
     * them for three more leases; then the pool is let go. Returns how many keys {@code b} ran.
     */
    private int contestWhileThePoolIsSaturated(Jvm a, Jvm b, List<String> keys) throws InterruptedException {
        CountDownLatch release = new CountDownLatch(1);
        a.saturatePool(2, release);
        double renewedBefore = a.renewals("renewed");
        AtomicInteger runsOnB = new AtomicInteger();
        try {
            await().atMost(LEASE.multipliedBy(10))
                    .pollInterval(Duration.ofMillis(50))
                    .until(() -> {
                        for (String key : keys) {
                            try {
                                b.executor.execute(handler, message(key), runsOnB::incrementAndGet);
                            } catch (MessageBusyException busy) {
                                // a's live claim
                            }
                        }
                        return runsOnB.get() > 0 || a.renewals("renewed") >= renewedBefore + 9 * keys.size();
                    });
        } finally {
            release.countDown();
        }
        return runsOnB.get();
    }

    /**
     * A renewal held up (here: frozen before it reaches the ledger, as a renewal waiting for a
     * connection is) while the JVM's clock moves on a whole lease lands late: it still renews the
     * claim (nobody took it over), and it is counted {@code late} besides {@code renewed}. One held
     * up for half a lease (more than a third of the lease left when it lands) is not late. The
     * clock is the executor's ticker, moved by hand; the renewal ticks run on their own schedule.
     */
    @Test
    @Execution(ExecutionMode.CONCURRENT)
    void aRenewalThatLandsWithLessThanAThirdOfTheLeaseLeftIsCountedLate() throws Exception {
        AtomicLong clock = new AtomicLong();
        Jvm a = new Jvm(jvms.size(), true, 4, false, clock::get);
        jvms.add(a);
        CountDownLatch finish = new CountDownLatch(1);
        Future<HandlerResult<Object>> first = threads.submit(() -> a.executor.execute(handler, message("k1"), () -> {
            finish.await();
            return "a";
        }));

        double renewed = landsAfter(a, clock, LEASE.dividedBy(2), 1);
        assertThat(a.renewals("renewed")).as("landed").isGreaterThan(renewed);
        assertThat(a.renewals("late"))
                .as("half a lease after the claim: on time")
                .isZero();

        landsAfter(a, clock, LEASE, 2);
        await().atMost(LEASE.multipliedBy(10)).until(() -> a.renewals("late") >= 1);
        assertThat(a.renewals("late"))
                .as("a whole lease after the previous renewal")
                .isEqualTo(1);
        finish.countDown();
        assertThat(first.get(10, TimeUnit.SECONDS).outcome()).isEqualTo(MessageOutcome.PROCESSED);
        assertThat(row("k1").attempts()).isEqualTo(1);
    }

    /**
     * Holds {@code a}'s next renewal before it reaches the ledger (its {@code frozen}-th), moves
     * {@code a}'s clock on by {@code by}, lets the renewal land and waits until it has counted.
     * Returns the {@code renewed} count from before it landed.
     */
    private static double landsAfter(Jvm a, AtomicLong clock, Duration by, int frozen) {
        CountDownLatch held = new CountDownLatch(1);
        a.store.frozen = held;
        await().atMost(LEASE.multipliedBy(10)).until(() -> a.store.waiting.get() == frozen);
        double renewed = a.renewals("renewed");
        clock.addAndGet(by.toNanos());
        a.store.frozen = null;
        held.countDown();
        await().atMost(LEASE.multipliedBy(10)).until(() -> a.renewals("renewed") > renewed);
        return renewed;
    }

    // ---------------------------------------------------------------- renewal ends with the handler

    @Test
    @Execution(ExecutionMode.CONCURRENT)
    void renewalStopsWhenTheHandlerReturns() throws Exception {
        Jvm a = jvm(true);
        String handlerThread = Thread.currentThread().getName();

        HandlerResult<String> result = a.executor.execute(handler, message("k1"), () -> {
            runsUntilRenewedFor(a, LEASE.multipliedBy(3).dividedBy(2), () -> false);
            return "done";
        });
        long returned = System.nanoTime();

        assertThat(result.outcome()).isEqualTo(MessageOutcome.PROCESSED);
        List<RenewCall> calls = List.copyOf(a.store.calls);
        assertThat(calls).as("renewed while it ran").isNotEmpty();
        assertThat(calls).allSatisfy(call -> {
            assertThat(call.thread()).isNotEqualTo(handlerThread).startsWith("sumi-lease-renewal-");
            assertThat(call.ended()).isLessThan(returned);
        });
        await().during(LEASE).atMost(LEASE.multipliedBy(5)).until(() -> a.store.calls.size() == calls.size());
    }

    @Test
    @Execution(ExecutionMode.CONCURRENT)
    void renewalStopsWhenTheHandlerThrowsAndTheReleasedKeyIsFreeAtOnce() throws Exception {
        Jvm a = jvm(true);
        Jvm b = jvm(true);

        assertThatThrownBy(() -> a.executor.execute(handler, message("k1"), () -> {
                    runsUntilRenewedFor(a, LEASE.multipliedBy(3).dividedBy(2), () -> false);
                    throw new IllegalStateException("SMTP 451");
                }))
                .hasMessage("SMTP 451");
        int calls = a.store.calls.size();

        assertThat(calls).isPositive();
        assertThat(b.executor.execute(handler, message("k1"), () -> "b").outcome())
                .as("released, not renewed after")
                .isEqualTo(MessageOutcome.PROCESSED);
        await().during(LEASE).atMost(LEASE.multipliedBy(5)).until(() -> a.store.calls.size() == calls);
    }

    // ---------------------------------------------------------------- faults and limits

    @Test
    @Execution(ExecutionMode.CONCURRENT)
    void aFailedRenewalIsRetriedAtTheNextTick() throws Exception {
        Jvm a = jvm(true);
        Jvm b = jvm(true);
        a.store.failures.set(1);

        Contest contest = contest(a, b, "k1");

        assertThat(contest.runs).as("no takeover").hasValue(1);
        assertThat(a.renewals("failed")).isEqualTo(1);
        assertThat(a.renewals("renewed")).isGreaterThanOrEqualTo(3);
        assertThat(contest.firstResult().outcome()).isEqualTo(MessageOutcome.PROCESSED);
    }

    @Test
    @Execution(ExecutionMode.CONCURRENT)
    void aRenewalThatFindsItsClaimTakenOverStopsAndIsCounted() throws Exception {
        Jvm a = jvm(true);
        Jvm b = jvm(true);
        CountDownLatch started = new CountDownLatch(1);
        CountDownLatch finish = new CountDownLatch(1);
        a.store.frozen = new CountDownLatch(1); // a long GC pause: renewals hang
        Future<HandlerResult<Object>> first = threads.submit(() -> a.executor.execute(handler, message("k1"), () -> {
            started.countDown();
            finish.await();
            return "a";
        }));
        assertThat(started.await(10, TimeUnit.SECONDS)).isTrue();
        await().atMost(LEASE.multipliedBy(5)).until(() -> a.store.waiting.get() > 0);

        // The lease runs out while the JVM is frozen; the other consumer takes the message over.
        jdbc.update("UPDATE processed_messages SET lease_until = ? WHERE consumer = ?", LONG_AGO, consumer);
        assertThat(b.executor.execute(handler, message("k1"), () -> "b").outcome())
                .isEqualTo(MessageOutcome.PROCESSED);
        a.store.frozen.countDown();

        await().atMost(LEASE.multipliedBy(5)).until(() -> a.renewals("lost") == 1);
        assertNoMoreRenewals(a);
        finish.countDown();
        assertThat(first.get(10, TimeUnit.SECONDS).outcome())
                .as("acked: the taker completed it")
                .isEqualTo(MessageOutcome.PROCESSED);
        assertThat(a.count("sumi.leases.lost")).isEqualTo(1);
    }

    @Test
    @Execution(ExecutionMode.CONCURRENT)
    void pastItsMaxRunTimeAHandlersLeaseLapsesAndIsReported() throws Exception {
        Jvm a = jvm(true);
        Jvm b = jvm(true);
        Duration maxRun = LEASE.multipliedBy(3).dividedBy(2);
        HandlerDefinition bounded = HandlerDefinition.builder(consumer)
                .mode(IdempotencyMode.LEASE)
                .lease(LEASE)
                .maxRun(maxRun)
                .build();
        CountDownLatch started = new CountDownLatch(1);
        CountDownLatch takenOver = new CountDownLatch(1);
        long begin = System.nanoTime();
        Future<HandlerResult<Object>> first = threads.submit(() -> a.executor.execute(bounded, message("k1"), () -> {
            started.countDown();
            takenOver.await(20, TimeUnit.SECONDS);
            return "a";
        }));
        assertThat(started.await(10, TimeUnit.SECONDS)).isTrue();

        await().atMost(LEASE.multipliedBy(10))
                .pollInterval(Duration.ofMillis(50))
                .until(() -> {
                    try {
                        b.executor.execute(bounded, message("k1"), () -> "b");
                        return true;
                    } catch (MessageBusyException busy) {
                        return false;
                    }
                });
        long elapsed = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - begin);
        takenOver.countDown();

        log.info("{}: taken over {} ms after the claim (max run {}, lease {})", database, elapsed, maxRun, LEASE);
        assertThat(elapsed).as("not before the max run time").isGreaterThanOrEqualTo(maxRun.toMillis());
        assertThat(a.count("sumi.leases.overruns")).isEqualTo(1);
        assertThat(first.get(10, TimeUnit.SECONDS).outcome()).isEqualTo(MessageOutcome.PROCESSED);
        assertThat(a.count("sumi.leases.lost")).isEqualTo(1);
    }

    // ---------------------------------------------------------------- harness

    /** What a contest for one key ended with. */
    static final class Contest {
        final AtomicInteger runs = new AtomicInteger();
        final AtomicInteger busy = new AtomicInteger();

        @Nullable
        Future<HandlerResult<Object>> first;

        @Nullable
        MessageOutcome afterwards;

        HandlerResult<Object> firstResult() throws Exception {
            return first.get();
        }
    }

    /**
     * {@code a} runs a handler for {@code key} until it has been renewed for three leases (or
     * {@code b} has taken it over and completed it); meanwhile {@code b} receives it every 50 ms
     * (its own run returns at once), and once more after {@code a} has returned.
     */
    private Contest contest(Jvm a, Jvm b, String key) throws Exception {
        Contest contest = new Contest();
        CountDownLatch started = new CountDownLatch(1);
        AtomicInteger takenOver = new AtomicInteger();
        contest.first = threads.submit(() -> a.executor.execute(handler, message(key), () -> {
            contest.runs.incrementAndGet();
            started.countDown();
            runsUntilRenewedFor(a, HANDLER_TIME, () -> takenOver.get() > 0);
            return "a";
        }));
        assertThat(started.await(10, TimeUnit.SECONDS)).isTrue();
        Future<HandlerResult<Object>> running = contest.first;
        await().atMost(HANDLER_TIME.multipliedBy(5))
                .pollInterval(Duration.ofMillis(50))
                .until(() -> {
                    try {
                        if (b.executor
                                        .execute(handler, message(key), contest.runs::incrementAndGet)
                                        .outcome()
                                == MessageOutcome.PROCESSED) {
                            takenOver.incrementAndGet(); // and completed: a may return now
                        }
                    } catch (MessageBusyException ex) {
                        contest.busy.incrementAndGet();
                    }
                    return running.isDone();
                });
        running.get(10, TimeUnit.SECONDS);
        contest.afterwards =
                b.executor.execute(handler, message(key), () -> "late").outcome();
        return contest;
    }

    static final List<String> POLL = List.of("p1", "p2", "p3");

    /** What a poll's contest ended with. */
    static final class PollContest {
        final AtomicInteger runsOnA = new AtomicInteger();
        final AtomicInteger runsOnB = new AtomicInteger();
        final AtomicInteger busy = new AtomicInteger();
        final AtomicInteger completed = new AtomicInteger();
    }

    /**
     * {@code a} claims a poll of three keys and runs each until the poll's claims have been renewed
     * for one more lease (the first one's completion is kept for two more leases), or until
     * {@code b} has taken one over, then writes the completions and ends the poll; meanwhile
     * {@code b} receives each key every 50 ms (its own run returns at once).
     */
    private PollContest pollContest(Jvm a, Jvm b) throws Exception {
        PollContest contest = new PollContest();
        CountDownLatch claimed = new CountDownLatch(1);
        Future<?> poll = threads.submit(() -> {
            PollClaim claim = Objects.requireNonNull(a.executor.claimPoll(handler, messages(POLL)));
            claimed.countDown();
            for (int i = 0; i < POLL.size(); i++) {
                claim.execute(i, () -> {
                    runsUntilRenewedFor(a, LEASE, () -> contest.runsOnB.get() > 0);
                    return contest.runsOnA.incrementAndGet();
                });
            }
            contest.completed.set(claim.completePending());
            claim.releaseUnrun();
            return null;
        });
        assertThat(claimed.await(10, TimeUnit.SECONDS)).isTrue();
        await().atMost(LEASE.multipliedBy(15))
                .pollInterval(Duration.ofMillis(50))
                .until(() -> {
                    for (String key : POLL) {
                        try {
                            b.executor.execute(handler, message(key), contest.runsOnB::incrementAndGet);
                        } catch (MessageBusyException ex) {
                            contest.busy.incrementAndGet();
                        }
                    }
                    return poll.isDone();
                });
        poll.get(10, TimeUnit.SECONDS);
        return contest;
    }

    /**
     * A handler's body that runs for {@code time}, measured in {@code jvm}'s renewal statements (one
     * every third of a lease, whatever they return), not slept through: returns once that many more
     * have been made, or at once when {@code over} holds (the claim was taken over; with renewal
     * off no statement is made, so only {@code over} ends it).
     */
    private static void runsUntilRenewedFor(Jvm jvm, Duration time, Callable<Boolean> over) {
        int target = jvm.store.calls.size() + (int) (time.toNanos() / (LEASE.toNanos() / 3));
        await().atMost(time.plus(LEASE).multipliedBy(5))
                .pollInterval(Duration.ofMillis(10))
                .until(() -> jvm.store.calls.size() >= target || over.call());
    }

    /** No renewal statement of {@code jvm} for a whole lease (what it renewed has ended). */
    private static void assertNoMoreRenewals(Jvm jvm) {
        int calls = jvm.store.calls.size();
        await().during(LEASE).atMost(LEASE.multipliedBy(5)).until(() -> jvm.store.calls.size() == calls);
    }

    private static List<InboundMessage> messages(List<String> keys) {
        return keys.stream().map(LeaseRenewalIntegrationTests::message).toList();
    }

    private Jvm jvm(boolean renew) {
        Jvm jvm = new Jvm(jvms.size(), renew);
        jvms.add(jvm);
        return jvm;
    }

    private ProcessedMessage row(String key) {
        return JdbcProcessedMessageStore.builder(database.dataSource())
                .build()
                .find(consumer, key)
                .orElseThrow();
    }

    private static InboundMessage message(String key) {
        return H2ExecutorTestSupport.message(key);
    }

    /** One renewal statement as the store saw it. */
    record RenewCall(String thread, long started, long ended) {}

    /** A store that records its renewals and can fail or freeze them. */
    static final class RecordingStore extends ForwardingProcessedMessageStore {
        final List<RenewCall> calls = new CopyOnWriteArrayList<>();
        final AtomicInteger failures = new AtomicInteger();
        final AtomicInteger waiting = new AtomicInteger();
        volatile @Nullable CountDownLatch frozen;

        RecordingStore(ProcessedMessageStore delegate) {
            super(delegate);
        }

        @Override
        public int renewAll(String consumer, long claimToken, Collection<String> messageIds, Duration lease) {
            long started = System.nanoTime();
            try {
                CountDownLatch latch = frozen;
                if (latch != null) {
                    waiting.incrementAndGet();
                    latch.await();
                }
                if (failures.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                    throw new TransientDataAccessResourceException("injected: the ledger is unreachable");
                }
                return super.renewAll(consumer, claimToken, messageIds, lease);
            } catch (InterruptedException ex) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(ex);
            } finally {
                calls.add(new RenewCall(Thread.currentThread().getName(), started, System.nanoTime()));
            }
        }
    }

    /** One simulated JVM: a connection pool, a store and an executor of its own. */
    final class Jvm {
        final HikariDataSource pool;
        final @Nullable HikariDataSource renewalPool;
        final RecordingStore store;
        final IdempotentExecutor executor;
        final SimpleMeterRegistry meters = new SimpleMeterRegistry();

        Jvm(int id, boolean renew) {
            this(id, renew, 4, false);
        }

        /**
         * @param poolSize the application's pool, which the ledger uses (its connection timeout is
         *     longer than the lease, as HikariCP's 30 s default is not shorter than Sumi's 30 s lease)
         * @param ownRenewalPool whether renewals take their connections from a pool of their own
         */
        Jvm(int id, boolean renew, int poolSize, boolean ownRenewalPool) {
            this(id, renew, poolSize, ownRenewalPool, System::nanoTime);
        }

        /** @param ticker the executor's monotonic clock (what renewal measures lateness on) */
        Jvm(int id, boolean renew, int poolSize, boolean ownRenewalPool, LongSupplier ticker) {
            this.pool = pool("renewal-jvm-" + id, poolSize, LEASE.multipliedBy(8));
            this.renewalPool = ownRenewalPool ? pool("renewal-jvm-" + id + "-renewals", 2, LEASE.dividedBy(2)) : null;
            JdbcProcessedMessageStore.Builder ledger = JdbcProcessedMessageStore.builder((DataSource) pool);
            if (renewalPool != null) {
                ledger.renewalDataSource(renewalPool);
            }
            this.store = new RecordingStore(ledger.build());
            this.executor = IdempotentExecutor.builder(store)
                    .meterRegistry(meters)
                    .leaseRenewal(renew)
                    .ticker(ticker)
                    .build();
        }

        private HikariDataSource pool(String name, int size, Duration connectionTimeout) {
            String[] settings = database.settings();
            HikariConfig config = new HikariConfig();
            config.setJdbcUrl(settings[0]);
            config.setUsername(settings[1]);
            config.setPassword(settings[2]);
            config.setMaximumPoolSize(size);
            config.setConnectionTimeout(connectionTimeout.toMillis());
            config.setPoolName(name);
            return new HikariDataSource(config);
        }

        /** As {@code kill -9}: renewal stops, and nothing reaches the ledger any more. */
        void kill() {
            executor.close();
            pool.close();
            if (renewalPool != null) {
                renewalPool.close();
            }
        }

        /**
         * The application's other work takes every connection of this JVM's pool and keeps them
         * until {@code release} opens.
         */
        void saturatePool(int connections, CountDownLatch release) throws InterruptedException {
            CountDownLatch holding = new CountDownLatch(connections);
            for (int i = 0; i < connections; i++) {
                threads.submit(() -> {
                    try (Connection held = pool.getConnection()) {
                        holding.countDown();
                        release.await();
                    }
                    return null;
                });
            }
            assertThat(holding.await(20, TimeUnit.SECONDS))
                    .as("every connection held")
                    .isTrue();
        }

        double renewals(String result) {
            Counter counter = meters.find("sumi.leases.renewals")
                    .tag("consumer", consumer)
                    .tag("result", result)
                    .counter();
            return counter == null ? 0 : counter.count();
        }

        double count(String name) {
            Counter counter = meters.find(name).tag("consumer", consumer).counter();
            return counter == null ? 0 : counter.count();
        }
    }
}
