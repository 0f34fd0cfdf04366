package io.sumi.budget;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The contract every {@link SpendStore} keeps, whatever it stores spend in: run against each store
 * (the JDBC store on each database, the Redis store standalone and on a cluster) by a small
 * subclass. The store's operations one at a time (registration, reservations within the limit,
 * charges, releases, the store's clock naming the window, forgetting old windows), reservations
 * racing from real threads, and fleet budgets on it: instances (each with its own store and
 * registry, as separate JVMs) sharing one window whatever their clocks say, and failing closed when
 * the store is out of reach. Each test uses budgets of its own, so tests never see each other's
 * spend.
 */
public abstract class SpendStoreContract {

    /** Long, so that no run straddles the end of a window of the store's (real) clock. */
    protected static final Duration WINDOW = Duration.ofDays(30);

    protected static final long WINDOW_MILLIS = WINDOW.toMillis();

    protected SpendStore store;
    protected String budget;

    /** A store on the suite's backend; each call a new one, as another instance of the fleet would have. */
    protected abstract SpendStore newStore();

    /** A store configured like {@link #newStore} but on a backend nothing answers on (a port with nothing listening). */
    protected abstract SpendStore unreachableStore();

    /**
     * Deletes what the test's budgets left in the backend (every budget whose name starts with
     * {@code budgetPrefix}), where the backend keeps it longer than the test; nothing by default.
     */
    protected void deleteSpend(String budgetPrefix) {}

    @BeforeEach
    void setUpStore() {
        store = newStore();
        budget = "contract-" + UUID.randomUUID().toString().substring(0, 8);
    }

    @AfterEach
    void deleteTheTestsSpend() {
        deleteSpend(budget);
    }

    /** The current window by the test's clock (the store's is the database's or the server's: the same here). */
    protected static long currentWindow() {
        return Math.floorDiv(System.currentTimeMillis(), WINDOW_MILLIS) * WINDOW_MILLIS;
    }

    // ---------------------------------------------------------------- the store's operations

    @Test
    void anUnregisteredBudgetReservesNothingAndReadsAsNoLimit() {
        SpendStore.Grant grant = store.tryReserve(budget, WINDOW_MILLIS, 1);

        assertThat(grant.reserved()).isFalse();
        assertThat(store.read(budget, grant.window().start())).isEqualTo(new SpendStore.WindowState(0, 0));
    }

    @Test
    void aReservationIsAddedOnlyIfTheWindowStaysWithinTheLimit() {
        assertThat(store.registerLimit(budget, 3)).isEqualTo(3);

        SpendStore.Grant first = store.tryReserve(budget, WINDOW_MILLIS, 2);
        assertThat(first.reserved()).isTrue();
        assertThat(store.tryReserve(budget, WINDOW_MILLIS, 2).reserved()).isFalse();
        assertThat(store.tryReserve(budget, WINDOW_MILLIS, 1).reserved())
                .as("exactly the limit")
                .isTrue();
        assertThat(store.tryReserve(budget, WINDOW_MILLIS, 0.5).reserved()).isFalse();

        assertThat(store.read(budget, first.window().start())).isEqualTo(new SpendStore.WindowState(3, 3));
        SpendStore.CurrentWindow current = store.readCurrent(budget, WINDOW_MILLIS);
        assertThat(current.window().start()).isEqualTo(first.window().start());
        assertThat(current.state().remaining()).isZero();
    }

    @Test
    void chargesAddWhateverTheLimitAndReleasesTakeBack() {
        store.registerLimit(budget, 10);
        long window = store.tryReserve(budget, WINDOW_MILLIS, 4).window().start();

        store.charge(budget, window, 7.25); // learned after the call: the money is spent
        assertThat(store.read(budget, window).spent()).isEqualTo(11.25);
        assertThat(store.tryReserve(budget, WINDOW_MILLIS, 1).reserved()).isFalse();

        store.release(budget, window, 2.25);
        assertThat(store.read(budget, window)).isEqualTo(new SpendStore.WindowState(9, 10));
        assertThat(store.tryReserve(budget, WINDOW_MILLIS, 1).reserved()).isTrue();
        // A charge to a window nothing was reserved in yet (a cost recorded for a window just begun).
        store.charge(budget, window - WINDOW_MILLIS, 0.1);
        store.charge(budget, window - WINDOW_MILLIS, 0.2);
        assertThat(store.read(budget, window - WINDOW_MILLIS).spent()).isEqualTo(0.1 + 0.2);
    }

    @Test
    void aLimitSetAtRunTimeStaysUntilAnotherConfigurationIsRegistered() {
        assertThat(store.registerLimit(budget, 100)).isEqualTo(100);
        store.setLimit(budget, 3);

        assertThat(newStore().registerLimit(budget, 100))
                .as("a restart with the same configuration")
                .isEqualTo(3);
        assertThat(newStore().registerLimit(budget, 5))
                .as("a deployment with another limit")
                .isEqualTo(5);
        assertThat(store.readCurrent(budget, WINDOW_MILLIS).state().limit()).isEqualTo(5);

        String unregistered = budget + "-set";
        store.setLimit(unregistered, 7);
        assertThat(store.registerLimit(unregistered, 7)).isEqualTo(7);
    }

    @Test
    void theStoresClockNamesTheWindowAndWhatItHasLeft() {
        store.registerLimit(budget, 10);
        long before = System.currentTimeMillis();
        SpendStore.Grant grant = store.tryReserve(budget, WINDOW_MILLIS, 1);
        long after = System.currentTimeMillis();

        // This machine's services and the test share one clock: the window is today's.
        assertThat(grant.window().start()).isEqualTo(currentWindow());
        long end = grant.window().start() + WINDOW_MILLIS;
        assertThat(grant.window().millisLeft())
                .isBetween(end - after - 1_000, end - before + 1_000)
                .isLessThanOrEqualTo(WINDOW_MILLIS);
        assertThat(store.readCurrent(budget, Duration.ofMillis(1_000).toMillis())
                        .window()
                        .millisLeft())
                .as("a one-second window")
                .isBetween(0L, 1_000L);
    }

    @Test
    void oldWindowsAreForgottenRelativeToTheStoresClockKeepingTheRecentOnes() {
        store.registerLimit(budget, 10);
        long current = store.tryReserve(budget, WINDOW_MILLIS, 1).window().start();
        for (int back = 1; back <= 4; back++) {
            store.charge(budget, current - back * WINDOW_MILLIS, back);
        }

        store.forgetOldWindows(budget, WINDOW_MILLIS, 2);

        assertThat(store.read(budget, current).spent()).isEqualTo(1);
        assertThat(store.read(budget, current - WINDOW_MILLIS).spent()).isEqualTo(1);
        assertThat(store.read(budget, current - 2 * WINDOW_MILLIS).spent()).isEqualTo(2);
        assertThat(store.read(budget, current - 3 * WINDOW_MILLIS).spent())
                .as("forgotten")
                .isZero();
        assertThat(store.read(budget, current - 4 * WINDOW_MILLIS).spent())
                .as("forgotten")
                .isZero();
    }

    @Test
    void anUnreachableStoreFailsEveryOperation() {
        SpendStore down = unreachableStore();

        assertThatThrownBy(() -> down.registerLimit(budget, 1)).isInstanceOf(RuntimeException.class);
        assertThatThrownBy(() -> down.tryReserve(budget, WINDOW_MILLIS, 1)).isInstanceOf(RuntimeException.class);
        assertThatThrownBy(() -> down.readCurrent(budget, WINDOW_MILLIS)).isInstanceOf(RuntimeException.class);
    }

    // ---------------------------------------------------------------- races

    /**
     * Reservations of many instances at once never add up to more than the limit: 8 threads, each
     * with a store of its own, released together by a latch, reserve 1 at a time until refused;
     * exactly the limit is granted, and the store's record agrees.
     */
    @Test
    void concurrentReservationsNeverOverspendTheLimit() throws Exception {
        int threads = 8;
        int limit = 60;
        store.registerLimit(budget, limit);
        List<SpendStore> stores = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            stores.add(newStore());
        }
        CountDownLatch ready = new CountDownLatch(threads);
        CountDownLatch go = new CountDownLatch(1);
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<Integer>> granted = new ArrayList<>();
            for (SpendStore own : stores) {
                Callable<Integer> reserveUntilRefused = () -> {
                    ready.countDown();
                    go.await();
                    int mine = 0;
                    while (own.tryReserve(budget, WINDOW_MILLIS, 1).reserved()) {
                        mine++;
                    }
                    return mine;
                };
                granted.add(pool.submit(reserveUntilRefused));
            }
            assertThat(ready.await(10, TimeUnit.SECONDS)).isTrue();
            go.countDown();
            int total = 0;
            for (Future<Integer> each : granted) {
                total += each.get(60, TimeUnit.SECONDS);
            }
            assertThat(total).as("reservations granted").isEqualTo(limit);
            assertThat(store.read(budget, currentWindow()).spent()).isEqualTo(limit);
        } finally {
            pool.shutdownNow();
        }
    }

    // ---------------------------------------------------------------- fleet budgets on the store

    /** One instance of a fleet: its own store and registry, nothing shared with the others but the backend. */
    protected final class Instance implements AutoCloseable {
        final SpendStore store;
        final SimpleMeterRegistry meters = new SimpleMeterRegistry();
        final BudgetRegistry registry;

        Instance(SpendStore store, BudgetConfig config, Clock clock) {
            this.store = store;
            this.registry = BudgetRegistry.builder()
                    .spendStore(store)
                    .clock(clock)
                    .meterRegistry(meters)
                    .budget(budget, config)
                    .build();
        }

        Budget budget() {
            return registry.budget(budget);
        }

        @Override
        public void close() {
            registry.close();
            meters.close();
        }
    }

    /** Calls alternately on the instances until each has been refused twice in a row; returns the calls made. */
    static int spendAll(Instance... fleet) {
        int calls = 0;
        int refusedInARow = 0;
        for (int i = 0; refusedInARow < 2 * fleet.length && i < 1_000; i++) {
            try {
                fleet[i % fleet.length].budget().acquire().onSuccess();
                calls++;
                refusedInARow = 0;
            } catch (BudgetExhaustedException refused) {
                refusedInARow++;
            }
        }
        return calls;
    }

    @Test
    void instancesWhoseClocksDifferByMoreThanAWindowShareOneLimitAndGiveBackWhatTheyDidNotSpend() {
        BudgetConfig config = BudgetConfig.custom()
                .limit(10)
                .window(WINDOW)
                .chunkSize(3)
                .scope(BudgetScope.FLEET)
                .build();
        Clock ahead = Clock.offset(Clock.systemUTC(), WINDOW.multipliedBy(2).plusMinutes(7));
        try (Instance a = new Instance(newStore(), config, Clock.systemUTC());
                Instance b = new Instance(newStore(), config, ahead)) {
            assertThat(spendAll(a, b)).as("calls the fleet made").isEqualTo(10);
            assertThat(store.read(budget, currentWindow()).spent()).isEqualTo(10);
        }
        String other = budget + "-back";
        BudgetConfig chunked = BudgetConfig.from(config).build();
        try (Instance c = new Instance(newStore(), chunked, Clock.systemUTC())) {
            c.registry.update(other, chunked);
            // Chunks grow from the call's cost with what the instance reserved before: 1, 1, 2.
            for (int i = 0; i < 3; i++) {
                c.registry.budget(other).acquire().onSuccess();
            }
            assertThat(store.read(other, currentWindow()).spent()).isEqualTo(4);
            c.registry.close();
            assertThat(store.read(other, currentWindow()).spent())
                    .as("the unspent chunk given back")
                    .isEqualTo(3);
        }
    }

    /**
     * The same race through fleet budgets: 2 instances (a store and a registry each), 4 threads
     * each, released together by a latch, acquire until refused twice in a row. The calls permitted
     * never exceed the limit, and the store never records more than the limit.
     */
    @Test
    void concurrentFleetBudgetCallsNeverOverspendTheLimit() throws Exception {
        int limit = 40;
        BudgetConfig config = BudgetConfig.custom()
                .limit(limit)
                .window(WINDOW)
                .chunkSize(2)
                .scope(BudgetScope.FLEET)
                .build();
        int threadsEach = 4;
        try (Instance a = new Instance(newStore(), config, Clock.systemUTC());
                Instance b = new Instance(newStore(), config, Clock.systemUTC())) {
            List<Instance> fleet = List.of(a, b);
            CountDownLatch ready = new CountDownLatch(2 * threadsEach);
            CountDownLatch go = new CountDownLatch(1);
            ExecutorService pool = Executors.newFixedThreadPool(2 * threadsEach);
            try {
                List<Future<Integer>> permitted = new ArrayList<>();
                for (Instance instance : fleet) {
                    for (int t = 0; t < threadsEach; t++) {
                        Callable<Integer> callUntilRefused = () -> {
                            ready.countDown();
                            go.await();
                            int mine = 0;
                            int refusedInARow = 0;
                            while (refusedInARow < 2) {
                                try {
                                    instance.budget().acquire().onSuccess();
                                    mine++;
                                    refusedInARow = 0;
                                } catch (BudgetExhaustedException refused) {
                                    refusedInARow++;
                                }
                            }
                            return mine;
                        };
                        permitted.add(pool.submit(callUntilRefused));
                    }
                }
                assertThat(ready.await(10, TimeUnit.SECONDS)).isTrue();
                go.countDown();
                int total = 0;
                for (Future<Integer> each : permitted) {
                    total += each.get(60, TimeUnit.SECONDS);
                }
                assertThat(total).as("calls permitted").isLessThanOrEqualTo(limit);
                assertThat(store.read(budget, currentWindow()).spent()).isLessThanOrEqualTo(limit);
                // Not a vacuous bound: the threads raced for most of the limit (an instance that
                // gives up on a contended window leaves the rest to the other, so not all of it).
                assertThat(total).isGreaterThan(limit / 2);
            } finally {
                pool.shutdownNow();
            }
        }
    }

    @Test
    void aFleetBudgetOnAnUnreachableStoreFailsClosed() {
        BudgetConfig config = BudgetConfig.custom()
                .limit(10)
                .window(WINDOW)
                .scope(BudgetScope.FLEET)
                .build();
        try (Instance down = new Instance(unreachableStore(), config, Clock.systemUTC())) {
            assertThatThrownBy(() -> down.budget().acquire())
                    .isInstanceOfSatisfying(
                            BudgetExhaustedException.class,
                            ex -> assertThat(ex.reason()).isEqualTo(BudgetExhaustedException.Reason.STORE_UNAVAILABLE));
            assertThat(down.meters
                            .counter("sumi.budget.store.failures", "budget", budget)
                            .count())
                    .isGreaterThanOrEqualTo(1);
        }
    }
}
