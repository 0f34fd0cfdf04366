package io.sumi.budget;

import static org.assertj.core.api.Assertions.assertThat;

import io.sumi.testing.MutableClock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * An instance budget's spend (a running sum of its window, see {@code SpendWindow}) with real
 * threads: reservations, recorded and added costs, released permits and reads of the spend at the
 * same time, then windows rolling; the spend is always the exact sum of what is in the window, and
 * the limit is never exceeded.
 */
class InstanceBudgetConcurrencyTests {

    static final int THREADS = 8;
    static final int CALLS = 5_000;

    final MutableClock clock = MutableClock.at("2026-03-01T10:00:00Z");
    final ExecutorService threads = Executors.newFixedThreadPool(THREADS + 1);

    @AfterEach
    void stop() {
        threads.shutdownNow();
    }

    Budget budget(double limit) {
        return BudgetRegistry.builder()
                .clock(clock)
                .budget(
                        "llm",
                        BudgetConfig.custom()
                                .limit(limit)
                                .window(Duration.ofMinutes(1))
                                .scope(BudgetScope.INSTANCE)
                                .build())
                .build()
                .budget("llm");
    }

    @Test
    void theSpendIsTheExactSumOfTheWindowWhateverRunsAtTheSameTime() throws Exception {
        Budget budget = budget(1e12);

        long first = run(budget);
        assertThat(budget.spent()).isEqualTo((double) first);

        clock.advance(Duration.ofSeconds(30));
        long second = run(budget);
        assertThat(budget.spent()).isEqualTo((double) (first + second));

        // The first half leaves the window, then the second.
        clock.advance(Duration.ofSeconds(30));
        assertThat(budget.spent()).isEqualTo((double) second);
        clock.advance(Duration.ofSeconds(30));
        assertThat(budget.spent()).isZero();
    }

    @Test
    void aCostRecordedAfterItsCallLeftTheWindowDoesNotCount() {
        Budget budget = budget(100);
        BudgetPermit late = budget.acquire();
        clock.advance(Duration.ofSeconds(30));
        BudgetPermit current = budget.acquire();
        current.recordCost(7);
        current.onSuccess();
        clock.advance(Duration.ofSeconds(30)); // the first call leaves the window

        late.recordCost(50);
        late.onSuccess();

        assertThat(budget.spent()).isEqualTo(7.0);
    }

    @Test
    void concurrentCallsNeverSpendPastTheLimit() throws Exception {
        Budget budget = budget(1_000);
        AtomicInteger permitted = new AtomicInteger();
        CountDownLatch start = new CountDownLatch(1);
        List<Future<?>> workers = new ArrayList<>();
        for (int t = 0; t < THREADS; t++) {
            workers.add(threads.submit(() -> {
                start.await();
                for (int i = 0; i < 500; i++) {
                    try {
                        BudgetPermit permit = budget.acquire();
                        permitted.incrementAndGet();
                        permit.onSuccess();
                    } catch (BudgetExhaustedException refused) {
                        // the limit is reached
                    }
                }
                return null;
            }));
        }
        start.countDown();
        for (Future<?> worker : workers) {
            worker.get(60, TimeUnit.SECONDS);
        }

        assertThat(permitted).hasValue(1_000);
        assertThat(budget.spent()).isEqualTo(1_000.0);
    }

    /**
     * {@value #THREADS} threads make {@value #CALLS} calls each: a quarter record a cost, a quarter
     * add to the reserved one, a quarter end at the reserved cost, a quarter are released (cost
     * nothing); meanwhile another thread reads the spend, which must never be negative nor above
     * what was reserved so far. Returns what the calls kept.
     */
    private long run(Budget budget) throws Exception {
        AtomicLong kept = new AtomicLong();
        AtomicLong reserved = new AtomicLong();
        AtomicBoolean running = new AtomicBoolean(true);
        List<String> wrongReads = new CopyOnWriteArrayList<>();
        double before = budget.spent();
        CountDownLatch start = new CountDownLatch(1);
        Future<?> reader = threads.submit(() -> {
            start.await();
            while (running.get()) {
                // Read before the bound: a call counted in the spend is in the bound by then, or still running.
                double spent = budget.spent() - before;
                long upTo = reserved.get();
                if (spent < 0 || spent > upTo + (long) THREADS * 6) {
                    wrongReads.add(spent + " of at most " + upTo);
                }
            }
            return null;
        });
        List<Future<?>> workers = new ArrayList<>();
        for (int t = 0; t < THREADS; t++) {
            workers.add(threads.submit(() -> {
                start.await();
                ThreadLocalRandom random = ThreadLocalRandom.current();
                for (int i = 0; i < CALLS; i++) {
                    int cost = random.nextInt(1, 6);
                    BudgetPermit permit = budget.acquire();
                    switch (i % 4) {
                        case 0 -> {
                            permit.recordCost(cost);
                            permit.onSuccess();
                            kept.addAndGet(cost);
                        }
                        case 1 -> {
                            permit.addCost(cost);
                            permit.onSuccess();
                            kept.addAndGet(1 + cost);
                        }
                        case 2 -> {
                            permit.onSuccess();
                            kept.addAndGet(1);
                        }
                        default -> permit.release();
                    }
                    reserved.addAndGet(1 + cost);
                }
                return null;
            }));
        }
        start.countDown();
        for (Future<?> worker : workers) {
            worker.get(120, TimeUnit.SECONDS);
        }
        running.set(false);
        reader.get(10, TimeUnit.SECONDS);
        assertThat(wrongReads).isEmpty();
        return kept.get();
    }
}
