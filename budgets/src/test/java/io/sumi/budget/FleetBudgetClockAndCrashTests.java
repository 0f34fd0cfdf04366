package io.sumi.budget;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sumi.budget.FleetHarness.Instance;
import io.sumi.budget.jdbc.JdbcSpendStore;
import io.sumi.testing.MutableClock;
import io.sumi.testing.TestDatabase;
import java.time.Clock;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Regressions of issue 19, A12, on real databases: fleet windows are named by the database's clock
 * (instances whose clocks disagree by more than a window share one limit; a clock far ahead deletes
 * nothing current), an instance that dies holding reserved spend leaks at most the documented
 * bound, and an acquire waiting on the store does not hold up one the local chunk can serve.
 */
class FleetBudgetClockAndCrashTests {

    /**
     * The window of the tests on the database's clock: long, so that no run straddles the end of a
     * window (the clock is the real one; a run crossing an end would see two windows' limits).
     */
    static final Duration WINDOW = Duration.ofDays(30);

    static final Duration HOUR = Duration.ofHours(1);

    static long window(Duration window) {
        long millis = window.toMillis();
        return Math.floorDiv(System.currentTimeMillis(), millis) * millis;
    }

    /**
     * One fleet budget of a test (a fresh name, {@code limit} per {@code window} in chunks of
     * {@code chunk}) on one database, and the instances and registries that spend it.
     */
    record Fleet(TestDatabase database, String budget, BudgetConfig config) {

        static Fleet of(TestDatabase database, String prefix, double limit, Duration window, double chunk) {
            BudgetConfig config = BudgetConfig.custom()
                    .limit(limit)
                    .window(window)
                    .chunkSize(chunk)
                    .scope(BudgetScope.FLEET)
                    .build();
            return new Fleet(database, FleetHarness.budgetName(prefix), config);
        }

        /** The same settings under another fresh name. */
        Fleet another(String prefix) {
            return new Fleet(database, FleetHarness.budgetName(prefix), config);
        }

        String[] settings() {
            return FleetHarness.migrated(database);
        }

        Instance instance(String name) {
            return instance(name, Clock.systemUTC());
        }

        Instance instance(String name, Clock clock) {
            return new Instance(settings(), name, budget, config, clock);
        }

        /** A registry of the budget alone on {@code store}, judging by {@code clock}. */
        BudgetRegistry registry(SpendStore store, Clock clock, SimpleMeterRegistry meters) {
            return BudgetRegistry.builder()
                    .spendStore(store)
                    .clock(clock)
                    .meterRegistry(meters)
                    .budget(budget, config)
                    .build();
        }

        /** Calls alternately on the instances until each has been refused twice in a row; returns the calls made. */
        int spendAll(Instance... fleet) {
            int calls = 0;
            int refusedInARow = 0;
            for (int i = 0; refusedInARow < 2 * fleet.length && i < 1_000; i++) {
                Instance turn = fleet[i % fleet.length];
                try {
                    turn.registry.budget(budget).acquire().onSuccess();
                    calls++;
                    refusedInARow = 0;
                } catch (BudgetExhaustedException refused) {
                    refusedInARow++;
                }
            }
            return calls;
        }
    }

    @ParameterizedTest
    @EnumSource(TestDatabase.class)
    void instancesWhoseClocksDifferByMoreThanAWindowShareOneLimit(TestDatabase database) {
        Fleet fleet = Fleet.of(database, "skew", 10, WINDOW, 1);
        Clock ahead = Clock.offset(Clock.systemUTC(), WINDOW.multipliedBy(2).plusMinutes(7));
        try (Instance a = fleet.instance("skew-a");
                Instance b = fleet.instance("skew-b", ahead)) {
            assertThat(fleet.spendAll(a, b)).as("calls the fleet made").isEqualTo(10);
        }
    }

    @ParameterizedTest
    @EnumSource(TestDatabase.class)
    void aClockFarAheadDeletesNoWindowTheFleetStillSpendsIn(TestDatabase database) {
        Fleet fleet = Fleet.of(database, "ahead", 10, WINDOW, 1);
        String budget = fleet.budget();
        // Further ahead than the windows a store keeps (100): its "old windows" include the fleet's current one.
        Clock ahead = Clock.offset(Clock.systemUTC(), WINDOW.multipliedBy(150));
        try (Instance a = fleet.instance("ahead-a");
                Instance b = fleet.instance("ahead-b", ahead)) {
            for (int i = 0; i < 3; i++) {
                a.registry.budget(budget).acquire().onSuccess();
            }
            b.registry.budget(budget).acquire().onSuccess();
            assertThat(a.store.read(budget, window(WINDOW)).spent())
                    .as("the current window, after the instance far ahead reserved")
                    .isEqualTo(4);
            assertThat(fleet.spendAll(a, b)).as("calls left to the fleet").isEqualTo(6);
        }
    }

    @ParameterizedTest
    @EnumSource(TestDatabase.class)
    void aBudgetClockThatJumpsPastTheWindowsEndGetsNoRoomBeforeTheStoresWindowRolls(TestDatabase database) {
        Fleet fleet = Fleet.of(database, "jump", 3, HOUR, 1);
        // The store's clock stands for the database's, which this test must move by hand.
        MutableClock storeClock = MutableClock.at("2031-05-01T10:00:00Z");
        MutableClock budgetClock = MutableClock.at("2031-05-01T10:00:00Z");
        try (HikariDataSource pool = FleetHarness.pool(fleet.settings(), "jump", 2)) {
            BudgetRegistry registry = fleet.registry(
                    JdbcSpendStore.builder(pool).windowClock(storeClock).build(),
                    budgetClock,
                    new SimpleMeterRegistry());
            try {
                Budget shared = registry.budget(fleet.budget());
                for (int i = 0; i < 3; i++) {
                    shared.acquire().onSuccess();
                }
                // The instance's clock is stepped two hours ahead: its stopwatch says the window is
                // over, but the store's has not rolled, so there is still no room, until its end.
                budgetClock.advance(HOUR.multipliedBy(2));
                assertThatThrownBy(shared::acquire).isInstanceOfSatisfying(BudgetExhaustedException.class, refused -> {
                    assertThat(refused.reason()).isEqualTo(BudgetExhaustedException.Reason.LIMIT_REACHED);
                    assertThat(refused.retryAt()).contains(budgetClock.instant().plus(HOUR));
                });
                // An hour later on both clocks the store's window has rolled: room again.
                storeClock.advance(HOUR);
                budgetClock.advance(HOUR);
                shared.acquire().onSuccess();
                assertThat(shared.spent()).isEqualTo(1);
            } finally {
                registry.close();
            }
        }
    }

    @ParameterizedTest
    @EnumSource(TestDatabase.class)
    void aCrashLoopDoesNotStarveTheFleetOfWhatItReservedAndDidNotSpend(TestDatabase database) {
        Fleet fleet = Fleet.of(database, "crash", 20, WINDOW, 5);
        // Four incarnations of a crash-looping instance: each makes one call and dies without close.
        for (int i = 0; i < 4; i++) {
            Instance incarnation = fleet.instance("crash-" + i);
            incarnation.registry.budget(fleet.budget()).acquire().onSuccess();
            incarnation.kill();
            incarnation.close();
        }
        try (Instance survivor = fleet.instance("crash-survivor")) {
            // The bound (docs/paid-apis.md): a dead instance leaves unspent at most
            // min(chunk-size, what it had reserved in the window before its last reservation): 0 here.
            assertThat(fleet.spendAll(survivor))
                    .as("calls left to the survivor")
                    .isEqualTo(16);
        }
        // One that had made 6 calls: it left at most min(chunk-size, 6 + one call) unspent.
        Fleet other = fleet.another("crash-busy");
        Instance busy = other.instance("crash-busy");
        for (int i = 0; i < 6; i++) {
            busy.registry.budget(other.budget()).acquire().onSuccess();
        }
        busy.kill();
        busy.close();
        try (Instance survivor = other.instance("crash-busy-survivor")) {
            assertThat(other.spendAll(survivor))
                    .as("calls left to the survivor")
                    .isGreaterThanOrEqualTo(20 - 6 - 5)
                    .isLessThanOrEqualTo(20 - 6);
        }
    }

    @ParameterizedTest
    @EnumSource(TestDatabase.class)
    void anAcquireWaitingOnTheStoreDoesNotHoldUpOneTheLocalChunkServes(TestDatabase database) throws Exception {
        Fleet fleet = Fleet.of(database, "lock", 100, WINDOW, 10);
        try (HikariDataSource pool = FleetHarness.pool(fleet.settings(), "lock", 4)) {
            BlockingStore store = new BlockingStore(JdbcSpendStore.builder(pool)
                    .queryTimeout(Duration.ofSeconds(2))
                    .build());
            BudgetRegistry registry = fleet.registry(store, Clock.systemUTC(), new SimpleMeterRegistry());
            try {
                Budget shared = registry.budget(fleet.budget());
                shared.acquire(4).onSuccess();
                shared.acquire(1).onSuccess(); // the instance now holds part of a chunk
                store.block.set(true);
                CompletableFuture<BudgetPermit> big = CompletableFuture.supplyAsync(() -> shared.acquire(8));
                assertThat(store.entered.await(10, TimeUnit.SECONDS))
                        .as("the big acquire is in a round trip")
                        .isTrue();
                CompletableFuture<BudgetPermit> small = CompletableFuture.supplyAsync(() -> shared.acquire(1));
                try {
                    BudgetPermit served = small.get(10, TimeUnit.SECONDS);
                    assertThat(big).as("the round trip is still blocked").isNotDone();
                    served.onSuccess();
                } finally {
                    store.release.countDown();
                }
                big.get(10, TimeUnit.SECONDS).onSuccess();
                assertThat(shared.spent()).isEqualTo(14);
            } finally {
                store.release.countDown();
                registry.close();
            }
        }
    }

    /** A store whose chunk reservations block, once armed, until released. */
    static final class BlockingStore implements SpendStore {
        final SpendStore delegate;
        final AtomicBoolean block = new AtomicBoolean();
        final CountDownLatch entered = new CountDownLatch(1);
        final CountDownLatch release = new CountDownLatch(1);
        final AtomicInteger reservations = new AtomicInteger();

        BlockingStore(SpendStore delegate) {
            this.delegate = delegate;
        }

        private void maybeBlock() {
            if (block.get()) {
                entered.countDown();
                try {
                    release.await(30, TimeUnit.SECONDS);
                } catch (InterruptedException ex) {
                    Thread.currentThread().interrupt();
                }
            }
        }

        @Override
        public double registerLimit(String budget, double configuredLimit) {
            return delegate.registerLimit(budget, configuredLimit);
        }

        @Override
        public void setLimit(String budget, double limit) {
            delegate.setLimit(budget, limit);
        }

        @Override
        public Grant tryReserve(String budget, long windowMillis, double amount) {
            maybeBlock();
            reservations.incrementAndGet();
            return delegate.tryReserve(budget, windowMillis, amount);
        }

        @Override
        public void charge(String budget, long windowStart, double amount) {
            delegate.charge(budget, windowStart, amount);
        }

        @Override
        public void release(String budget, long windowStart, double amount) {
            delegate.release(budget, windowStart, amount);
        }

        @Override
        public WindowState read(String budget, long windowStart) {
            return delegate.read(budget, windowStart);
        }

        @Override
        public CurrentWindow readCurrent(String budget, long windowMillis) {
            return delegate.readCurrent(budget, windowMillis);
        }

        @Override
        public void forgetOldWindows(String budget, long windowMillis, int windowsKept) {
            delegate.forgetOldWindows(budget, windowMillis, windowsKept);
        }
    }
}
