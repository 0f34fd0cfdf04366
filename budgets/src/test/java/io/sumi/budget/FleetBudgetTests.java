package io.sumi.budget;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sumi.budget.FleetHarness.Instance;
import io.sumi.testing.TestDatabase;
import java.time.Clock;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.awaitility.Awaitility;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A fleet budget's promises one at a time, with two or three instances (own pools, stores and
 * registries) on a real database: the shared window, chunks given back on close, variable costs
 * reconciled into the shared window, a limit changed on one instance applying to all, the limit of
 * a restarting instance, and failing closed when the database is unreachable.
 */
class FleetBudgetTests {

    static final Duration HOUR = Duration.ofHours(1);

    static Instance instance(TestDatabase database, String name, String budget, BudgetConfig config) {
        return new Instance(FleetHarness.migrated(database), name, budget, config, Clock.systemUTC());
    }

    static long window(Duration window) {
        long millis = window.toMillis();
        return Math.floorDiv(System.currentTimeMillis(), millis) * millis;
    }

    @ParameterizedTest
    @EnumSource(TestDatabase.class)
    void twoInstancesShareOneWindowAndGiveBackTheirUnspentChunksOnClose(TestDatabase database) throws Exception {
        String budget = FleetHarness.budgetName("share");
        BudgetConfig config =
                BudgetConfig.custom().limit(10).window(HOUR).chunkSize(3).build();
        try (Instance a = instance(database, "share-a", budget, config);
                Instance b = instance(database, "share-b", budget, config)) {
            AtomicInteger calls = new AtomicInteger();
            int refused = 0;
            for (int i = 0; i < 20; i++) {
                Instance turn = i % 2 == 0 ? a : b;
                try {
                    turn.registry.budget(budget).call(calls::incrementAndGet);
                } catch (BudgetExhaustedException ex) {
                    assertThat(ex.reason()).isEqualTo(BudgetExhaustedException.Reason.LIMIT_REACHED);
                    refused++;
                }
            }
            assertThat(calls.get()).isEqualTo(10);
            assertThat(refused).isEqualTo(10);
            assertThat(a.store.read(budget, window(HOUR)).spent()).isEqualTo(10);
            // Fewer calls than the chunks reserved: close gives the rest back. Chunks grow from the
            // call's cost with what the instance reserved before: 1, 1, 2 (one unspent).
            String other = FleetHarness.budgetName("giveback");
            a.registry.update(other, config);
            for (int i = 0; i < 3; i++) {
                a.registry.budget(other).call(calls::incrementAndGet);
            }
            assertThat(a.store.read(other, window(HOUR)).spent()).isEqualTo(4);
            a.registry.close();
            assertThat(a.store.read(other, window(HOUR)).spent()).isEqualTo(3);
        }
    }

    @ParameterizedTest
    @EnumSource(TestDatabase.class)
    void costsRecordedAfterTheCallAreChargedToTheSharedWindow(TestDatabase database) throws Exception {
        String budget = FleetHarness.budgetName("tokens");
        BudgetConfig config = BudgetConfig.custom()
                .limit(1_000)
                .window(HOUR)
                .costPerCall(10)
                .chunkSize(20)
                .build();
        try (Instance a = instance(database, "tokens-a", budget, config);
                Instance b = instance(database, "tokens-b", budget, config)) {
            a.registry.budget(budget).call(() -> "answer", answer -> 250); // 240 above the reservation
            b.registry.budget(budget).call(() -> "answer", answer -> 4); // 6 below: stays in b's chunk
            a.registry.close();
            b.registry.close();
            assertThat(a.store.read(budget, window(HOUR)).spent()).isEqualTo(254);
            // The window knows: the other instance sees the charge.
            BudgetExhaustedException refused = null;
            try (Instance c = instance(database, "tokens-c", budget, config)) {
                c.registry.budget(budget).acquire(740).onSuccess();
                try {
                    c.registry.budget(budget).acquire(10);
                } catch (BudgetExhaustedException ex) {
                    refused = ex;
                }
            }
            assertThat(refused).isNotNull();
        }
    }

    @ParameterizedTest
    @EnumSource(TestDatabase.class)
    void aLimitChangedOnOneInstanceAppliesToTheWholeFleet(TestDatabase database) throws Exception {
        String budget = FleetHarness.budgetName("limit");
        BudgetConfig config =
                BudgetConfig.custom().limit(100).window(HOUR).chunkSize(1).build();
        try (Instance a = instance(database, "limit-a", budget, config);
                Instance b = instance(database, "limit-b", budget, config)) {
            a.registry.update(budget, BudgetConfig.from(config).limit(3).build());
            AtomicInteger calls = new AtomicInteger();
            for (int i = 0; i < 3; i++) {
                b.registry.budget(budget).call(calls::incrementAndGet);
            }
            assertThatThrownBy(() -> b.registry.budget(budget).call(calls::incrementAndGet))
                    .isInstanceOf(BudgetExhaustedException.class);
            assertThat(calls.get()).isEqualTo(3);
            assertThat(b.registry.budget(budget).remaining()).isZero();
            // An instance that restarts with the configuration the change was made over keeps the
            // change (it registers its limit on its first reservation) ...
            try (Instance restarted = instance(database, "limit-c", budget, config)) {
                assertThatThrownBy(() -> restarted.registry.budget(budget).call(calls::incrementAndGet))
                        .isInstanceOf(BudgetExhaustedException.class);
                assertThat(restarted.store.read(budget, window(HOUR)).limit()).isEqualTo(3);
            }
            // ... one deployed with another configured limit makes its limit the fleet's.
            try (Instance deployed = instance(
                    database,
                    "limit-d",
                    budget,
                    BudgetConfig.from(config).limit(5).build())) {
                deployed.registry.budget(budget).call(calls::incrementAndGet);
                assertThat(deployed.store.read(budget, window(HOUR)).limit()).isEqualTo(5);
                deployed.registry.budget(budget).call(calls::incrementAndGet);
                assertThat(calls.get()).isEqualTo(5);
            }
        }
    }

    @ParameterizedTest
    @EnumSource(TestDatabase.class)
    void anUnreachableDatabaseFailsClosedAndTheBudgetRecoversWhenItAnswers(TestDatabase database) throws Exception {
        String budget = FleetHarness.budgetName("down");
        BudgetConfig config =
                BudgetConfig.custom().limit(100).window(HOUR).chunkSize(2).build();
        try (Instance a = instance(database, "down-a", budget, config)) {
            Budget shared = a.registry.budget(budget);
            AtomicInteger calls = new AtomicInteger();
            // Chunks grow from the call's cost: 1, 1, then 2, of which one is left unspent.
            for (int i = 0; i < 3; i++) {
                shared.call(calls::incrementAndGet);
            }
            a.dataSource.down = true;
            shared.call(calls::incrementAndGet); // the chunk it holds needs no round trip
            assertThatThrownBy(() -> shared.call(calls::incrementAndGet))
                    .isInstanceOfSatisfying(BudgetExhaustedException.class, ex -> {
                        assertThat(ex.reason()).isEqualTo(BudgetExhaustedException.Reason.STORE_UNAVAILABLE);
                        assertThat(ex.retryAt()).isPresent();
                    });
            assertThat(calls.get()).isEqualTo(4);
            assertThat(a.meters
                            .counter("sumi.budget.store.failures", "budget", budget)
                            .count())
                    .isGreaterThanOrEqualTo(1);
            assertThat(a.meters
                            .counter("sumi.budget.openings", "budget", budget, "reason", "store_unavailable")
                            .count())
                    .isEqualTo(1);
            a.dataSource.down = false;
            // Recovers once the store answers again, long before the hour's window ends.
            Awaitility.await()
                    .atMost(Duration.ofSeconds(60))
                    .pollInterval(Duration.ofMillis(100))
                    .ignoreExceptionsInstanceOf(BudgetExhaustedException.class)
                    .untilAsserted(() -> {
                        shared.call(calls::incrementAndGet);
                    });
            assertThat(calls.get()).isEqualTo(5);
            assertThat(shared.circuitBreaker().getState())
                    .isEqualTo(io.github.resilience4j.circuitbreaker.CircuitBreaker.State.CLOSED);
        }
    }
}
