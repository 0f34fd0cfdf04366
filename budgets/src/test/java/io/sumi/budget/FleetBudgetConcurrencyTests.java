package io.sumi.budget;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import io.sumi.budget.FleetHarness.Instance;
import io.sumi.testing.MutableClock;
import io.sumi.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Phaser;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.slf4j.LoggerFactory;

/**
 * The promise of a fleet budget under load: 4 instances, each with its own connection pool, store
 * and registry (threads in one JVM standing for separate JVMs: nothing is shared but the
 * database), 8 threads each, hammer one budget of 1,000 per 1 s window for four windows. The calls
 * made per window (counted by the callers) never exceed the limit; one instance is killed holding
 * an unspent chunk, and the window after it still lets the survivors spend the whole limit (the
 * dead chunk expired with its window). The negative control runs the same harness with scope
 * {@code instance}: the fleet then spends far more than the limit per window.
 *
 * <p>The windows are not the wall clock's: every instance's clock and the stores' window clock are
 * one {@link MutableClock}, moved on by the test only once every caller has been refused in the
 * current window. So each window is spent to the end however slow the machine is (a wall-clock
 * window might end before the survivors could spend it), the calls race each other and the
 * stores' reservations inside it, and the dead instance's unspent chunk is known exactly.
 */
class FleetBudgetConcurrencyTests {

    static final int INSTANCES = 4;
    static final int THREADS = 8;
    static final double LIMIT = 1_000;
    static final Duration WINDOW = Duration.ofSeconds(1);
    /** Windows hammered: two with the whole fleet, the kill's, the one after it. */
    static final int WINDOWS = 4;

    static final int KILL_WINDOW = 2;
    /** Calls the doomed instance makes at the start of the kill's window: its chunks grow to 1, 1, 2, 4, 8. */
    static final int CALLS_BEFORE_DEATH = 9;

    /** What the callers spent per window (0..3); what the doomed instance had reserved and not spent when it died. */
    record Run(Map<Integer, Long> spentPerWindow, double deadUnspent) {}

    /** Thousands of breaker transitions per run: their log lines would drown the test output. */
    @BeforeAll
    static void quietBudgetLog() {
        ((ch.qos.logback.classic.Logger) LoggerFactory.getLogger(Budget.class)).setLevel(Level.ERROR);
    }

    @AfterAll
    static void restoreBudgetLog() {
        ((ch.qos.logback.classic.Logger) LoggerFactory.getLogger(Budget.class)).setLevel(null);
    }

    @ParameterizedTest
    @EnumSource(TestDatabase.class)
    void theFleetNeverSpendsMoreThanTheLimitPerWindowAndADeadInstancesChunkExpires(TestDatabase database)
            throws Exception {
        String budget = FleetHarness.budgetName("hammer");
        BudgetConfig config = BudgetConfig.custom()
                .limit(LIMIT)
                .window(WINDOW)
                .scope(BudgetScope.FLEET)
                .build();
        List<Instance> fleet = new ArrayList<>();
        try {
            Run run = hammer(database, budget, config, fleet, true);
            Map<Integer, Long> spent = run.spentPerWindow();
            System.out.printf(
                    "fleet budget on %s: spent per window %s (limit %.0f, chunk %.0f, dead chunk %.0f)%n",
                    database, spent.values(), LIMIT, config.chunkSize(), run.deadUnspent());
            // The bound: calls at cost-per-call never overshoot (reservations are atomic, and a call
            // is made only against a reservation).
            assertThat(spent).hasSize(WINDOWS);
            assertThat(spent.values())
                    .allSatisfy(total -> assertThat((double) total).isLessThanOrEqualTo(LIMIT));
            // The kill's window: what the dead instance held is lost to the fleet until the window ends
            // (never spent twice), and the survivors spent the rest but for their own last chunks.
            assertThat(run.deadUnspent())
                    .as("the dead instance held an unspent chunk")
                    .isPositive();
            assertThat((double) spent.get(KILL_WINDOW))
                    .isLessThanOrEqualTo(LIMIT - run.deadUnspent())
                    .isGreaterThanOrEqualTo(LIMIT - run.deadUnspent() - (INSTANCES - 1) * config.chunkSize());
            // The window after the kill: the survivors spent the whole limit but for what their own
            // last chunks held when the window ended: the dead chunk did not carry over.
            assertThat((double) spent.get(KILL_WINDOW + 1))
                    .isGreaterThanOrEqualTo(LIMIT - (INSTANCES - 1) * config.chunkSize());
        } finally {
            fleet.forEach(Instance::close);
        }
    }

    /** Negative control: the same load on instance budgets lets the fleet spend up to 4 times the limit. */
    @ParameterizedTest
    @EnumSource(value = TestDatabase.class, names = "H2")
    void instanceBudgetsOvershootTheLimitInTheSameHarness(TestDatabase database) throws Exception {
        String budget = FleetHarness.budgetName("control");
        BudgetConfig config = BudgetConfig.custom()
                .limit(LIMIT)
                .window(WINDOW)
                .scope(BudgetScope.INSTANCE)
                .build();
        List<Instance> fleet = new ArrayList<>();
        try {
            Run run = hammer(database, budget, config, fleet, false);
            long max = run.spentPerWindow().values().stream()
                    .mapToLong(Long::longValue)
                    .max()
                    .orElse(0);
            System.out.printf(
                    "instance budgets: spent per window %s (limit %.0f)%n",
                    run.spentPerWindow().values(), LIMIT);
            assertThat((double) max).isGreaterThan(2 * LIMIT);
        } finally {
            fleet.forEach(Instance::close);
        }
    }

    /**
     * Runs the load for {@link #WINDOWS} windows. Every caller calls until it is refused, then waits
     * (two phases of one {@link Phaser} per window: all refused; the test has moved on). Between
     * the phases the test moves the clock to the next window; at the kill's window, with
     * {@code kill}, it first makes {@link #CALLS_BEFORE_DEATH} calls on the first instance (so it
     * holds part of its last chunk) and kills it without giving anything back.
     */
    private Run hammer(TestDatabase database, String budget, BudgetConfig config, List<Instance> fleet, boolean kill)
            throws Exception {
        String[] settings = FleetHarness.migrated(database);
        // Far from now, so no other run's rows can be in its windows; mid-window, so that no reading
        // falls on the instant a window ends (where the breaker, open until then, may still refuse).
        MutableClock clock = MutableClock.at("2031-05-01T10:00:00.500Z");
        long windowMillis = config.window().toMillis();
        long firstWindow = Math.floorDiv(clock.millis(), windowMillis) * windowMillis;
        for (int i = 0; i < INSTANCES; i++) {
            fleet.add(new Instance(settings, "fleet-" + i, budget, config, clock, clock));
        }
        ConcurrentMap<Integer, LongAdder> spent = new ConcurrentHashMap<>();
        AtomicBoolean stop = new AtomicBoolean();
        List<AtomicBoolean> alive = new ArrayList<>();
        Phaser phaser = new Phaser(1); // the test's party
        CountDownLatch done = new CountDownLatch(INSTANCES * THREADS);
        List<Throwable> unexpected = new CopyOnWriteArrayList<>();
        for (Instance instance : fleet) {
            AtomicBoolean up = new AtomicBoolean(true);
            alive.add(up);
            Budget shared = instance.registry.budget(budget);
            for (int t = 0; t < THREADS; t++) {
                phaser.register();
                Thread thread = new Thread(() -> {
                    try {
                        while (!stop.get() && up.get()) {
                            BudgetPermit permit;
                            try {
                                permit = shared.acquire();
                            } catch (BudgetExhaustedException refused) {
                                // Spent for this caller: wait for the next window instead of retrying.
                                phaser.awaitAdvanceInterruptibly(phaser.arrive(), 30, TimeUnit.SECONDS);
                                phaser.awaitAdvanceInterruptibly(phaser.arrive(), 30, TimeUnit.SECONDS);
                                continue;
                            }
                            // The paid call, counted in its window: the clock does not move while a caller calls.
                            int window = (int) ((clock.millis() - firstWindow) / windowMillis);
                            spent.computeIfAbsent(window, w -> new LongAdder()).increment();
                            permit.onSuccess();
                        }
                    } catch (InterruptedException ex) {
                        Thread.currentThread().interrupt();
                    } catch (Throwable ex) {
                        if (up.get()) {
                            unexpected.add(ex);
                        }
                    } finally {
                        phaser.arriveAndDeregister();
                        done.countDown();
                    }
                });
                thread.setDaemon(true);
                thread.start();
            }
        }
        double deadUnspent = 0;
        for (int window = 0; window < WINDOWS; window++) {
            // Every caller has been refused in this window: it is spent.
            phaser.awaitAdvanceInterruptibly(phaser.arrive(), 60, TimeUnit.SECONDS);
            assertThat(unexpected).isEmpty();
            if (window == WINDOWS - 1) {
                stop.set(true);
            } else {
                clock.advance(WINDOW);
                if (kill && window + 1 == KILL_WINDOW) {
                    Instance doomed = fleet.get(0);
                    for (int i = 0; i < CALLS_BEFORE_DEATH; i++) {
                        doomed.registry.budget(budget).acquire().onSuccess();
                        spent.computeIfAbsent(KILL_WINDOW, w -> new LongAdder()).increment();
                    }
                    // Nobody else has reserved in this window yet: all it reserved is the doomed instance's.
                    long windowStart = firstWindow + KILL_WINDOW * windowMillis;
                    deadUnspent = doomed.store.read(budget, windowStart).spent() - CALLS_BEFORE_DEATH;
                    alive.get(0).set(false);
                    doomed.kill();
                }
            }
            // The callers go on, in the next window (or stop).
            phaser.awaitAdvanceInterruptibly(phaser.arrive(), 60, TimeUnit.SECONDS);
        }
        assertThat(done.await(30, TimeUnit.SECONDS)).isTrue();
        assertThat(unexpected).isEmpty();
        Map<Integer, Long> perWindow = new TreeMap<>();
        spent.forEach((window, adder) -> perWindow.put(window, adder.sum()));
        return new Run(perWindow, deadUnspent);
    }
}
