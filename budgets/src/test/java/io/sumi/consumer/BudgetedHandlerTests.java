package io.sumi.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.resilience4j.circuitbreaker.CircuitBreaker.State;
import io.sumi.budget.Budget;
import io.sumi.budget.BudgetConfig;
import io.sumi.budget.BudgetExhaustedException;
import io.sumi.budget.BudgetPermit;
import io.sumi.budget.BudgetRegistry;
import io.sumi.consumer.exception.BatchFailedException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Handlers bound to a budget ({@code @IdempotentHandler(budget = ...)}): the budget is asked before
 * the ledger, a refusal claims nothing, duplicates cost nothing, the handler's cost is recorded.
 */
class BudgetedHandlerTests extends H2ExecutorTestSupport {

    BudgetRegistry budgets;
    IdempotentExecutor budgeted;

    @BeforeEach
    void budgets() {
        budgets = BudgetRegistry.builder()
                .clock(clock)
                .meterRegistry(meters)
                .budget("stripe", BudgetConfig.of(3, Duration.ofHours(1)))
                .budget(
                        "openai",
                        BudgetConfig.custom()
                                .limit(10_000)
                                .costPerCall(500)
                                .window(Duration.ofHours(1))
                                .build())
                .build();
        budgeted = IdempotentExecutor.builder(counting)
                .meterRegistry(meters)
                .decorator(budgets)
                .build();
    }

    HandlerDefinition bound(String budget) {
        return definition(IdempotencyMode.LEASE).budget(budget).build();
    }

    @Test
    void theCallAfterTheLimitFailsFastBeforeTheLedgerIsTouched() throws Exception {
        AtomicInteger charges = new AtomicInteger();
        for (int i = 1; i <= 3; i++) {
            assertThat(budgeted.execute(bound("stripe"), message("order-" + i), charges::incrementAndGet)
                            .outcome())
                    .isEqualTo(MessageOutcome.PROCESSED);
        }
        int claimsBefore = counting.claimAll.get();

        assertThatThrownBy(() -> budgeted.execute(bound("stripe"), message("order-4"), charges::incrementAndGet))
                .isInstanceOfSatisfying(BudgetExhaustedException.class, ex -> {
                    assertThat(ex.budget()).isEqualTo("stripe");
                    assertThat(ex.isRetryable()).isTrue();
                });

        assertThat(charges).hasValue(3);
        assertThat(counting.claimAll).hasValue(claimsBefore);
        assertThat(row("order-4")).isEmpty();
        assertThat(budgets.budget("stripe").circuitBreaker().getState()).isEqualTo(State.OPEN);

        // After the window the breaker half-opens; the message is claimed as its first attempt.
        clock.advance(Duration.ofHours(1));
        assertThat(budgeted.execute(bound("stripe"), message("order-4"), charges::incrementAndGet)
                        .outcome())
                .isEqualTo(MessageOutcome.PROCESSED);
        assertThat(row("order-4").orElseThrow().attempts()).isEqualTo(1);
        assertThat(budgets.budget("stripe").circuitBreaker().getState()).isEqualTo(State.CLOSED);
    }

    @Test
    void duplicatesCostNothing() throws Exception {
        budgeted.execute(bound("stripe"), message("order-1"), () -> "charged");
        for (int i = 0; i < 5; i++) {
            assertThat(budgeted.execute(bound("stripe"), message("order-1"), () -> "again")
                            .outcome())
                    .isEqualTo(MessageOutcome.DUPLICATE);
        }
        assertThat(budgets.budget("stripe").spent()).isEqualTo(1);
    }

    @Test
    void aHandlerRecordsTheTokensItsCallUsed() throws Exception {
        Budget openai = budgets.budget("openai");

        budgeted.execute(bound("openai"), message("prompt-1"), () -> {
            assertThat(openai.spent()).isEqualTo(500); // reserved while the call runs
            BudgetPermit.current().recordCost(7_000);
            return "summary";
        });
        assertThat(openai.spent()).isEqualTo(7_000);
        budgeted.execute(bound("openai"), message("prompt-2"), () -> {
            BudgetPermit.current().recordCost(2_600);
            return "summary";
        });

        // 9,600 spent: another 500 would exceed 10,000.
        assertThat(openai.circuitBreaker().getState()).isEqualTo(State.OPEN);
        assertThatThrownBy(() -> budgeted.execute(bound("openai"), message("prompt-3"), () -> "never"))
                .isInstanceOf(BudgetExhaustedException.class);
        assertThat(row("prompt-3")).isEmpty();
    }

    @Test
    void handlerFailuresCountForTheBreakerAndReleaseTheClaim() {
        budgets.update(
                "flaky",
                BudgetConfig.custom()
                        .limit(100)
                        .minimumNumberOfCalls(2)
                        .slidingWindowSize(2)
                        .build());

        for (int i = 0; i < 2; i++) {
            assertThatThrownBy(() -> budgeted.execute(bound("flaky"), message("order-1"), () -> {
                        throw new IllegalStateException("provider answered 503");
                    }))
                    .hasMessage("provider answered 503");
        }

        assertThat(budgets.budget("flaky").circuitBreaker().getState()).isEqualTo(State.OPEN);
        assertThatThrownBy(() -> budgeted.execute(bound("flaky"), message("order-1"), () -> "x"))
                .isInstanceOfSatisfying(
                        BudgetExhaustedException.class,
                        ex -> assertThat(ex.reason()).isEqualTo(BudgetExhaustedException.Reason.CIRCUIT_OPEN));
        assertThat(row("order-1").orElseThrow().attempts()).isEqualTo(2);
    }

    @Test
    void aBatchCostsCostPerCallForEachMessageItRuns() throws Exception {
        budgets.update("batch", BudgetConfig.of(10, Duration.ofHours(1)));
        budgeted.execute(definition(IdempotencyMode.LEASE).budget("batch").build(), message("m-0"), () -> "single");

        budgeted.executeBatch(
                definition(IdempotencyMode.LEASE).budget("batch").build(),
                List.of(message("m-0"), message("m-1"), message("m-2"), message("m-3")),
                indexes -> {
                    assertThat(indexes).containsExactly(1, 2, 3);
                });

        assertThat(budgets.budget("batch").spent()).isEqualTo(4);
    }

    @Test
    void aBatchThatWouldExceedTheLimitIsRefusedWholeBeforeTheLedgerIsTouched() throws Exception {
        budgets.update("calls", BudgetConfig.of(500, Duration.ofHours(1)));
        HandlerDefinition handler =
                definition(IdempotencyMode.LEASE).budget("calls").build();
        for (int i = 0; i < 499; i++) {
            budgets.budget("calls").acquire().onSuccess();
        }
        java.util.List<InboundMessage> big = new java.util.ArrayList<>();
        for (int i = 0; i < 500; i++) {
            big.add(message("big-" + i));
        }
        AtomicInteger ran = new AtomicInteger();
        int claimsBefore = counting.claimAll.get();

        assertThatThrownBy(() -> budgeted.executeBatch(handler, big, indexes -> ran.addAndGet(indexes.size())))
                .isInstanceOfSatisfying(BudgetExhaustedException.class, ex -> {
                    assertThat(ex.isRetryable()).isTrue();
                    assertThat(ex.retryAt())
                            .as("when the whole batch fits")
                            .contains(clock.instant().plus(Duration.ofHours(1)));
                });

        assertThat(ran).hasValue(0);
        assertThat(counting.claimAll).as("nothing claimed, so nothing lost").hasValue(claimsBefore);
        assertThat(ledgerRows()).isZero();
        assertThat(budgets.budget("calls").spent()).isEqualTo(499);

        BatchResult one =
                budgeted.executeBatch(handler, List.of(message("small-0")), indexes -> ran.addAndGet(indexes.size()));
        assertThat(one.processed()).isEqualTo(1);
        assertThat(budgets.budget("calls").spent()).isEqualTo(500);
    }

    @Test
    void aBatchReservesItsSizeAndKeepsOnlyWhatRan() throws Exception {
        budgets.update("calls", BudgetConfig.of(10, Duration.ofHours(1)));
        HandlerDefinition handler =
                definition(IdempotencyMode.LEASE).budget("calls").build();
        budgeted.execute(handler, message("m-0"), () -> "single");

        budgeted.executeBatch(
                handler, List.of(message("m-0"), message("m-1"), message("m-0"), message("m-2")), indexes -> {
                    assertThat(budgets.budget("calls").spent())
                            .as("the reservation for the duplicates is returned before the handler runs")
                            .isEqualTo(1 + 2);
                });

        assertThat(budgets.budget("calls").spent())
                .as("what ran: one single call and two batch messages")
                .isEqualTo(3);
    }

    @Test
    void aBatchCostingMoreThanTheWholeLimitRunsThePrefixThatFitsAndRedeliversTheRest() throws Exception {
        budgets.update("small", BudgetConfig.of(3, Duration.ofHours(1)));
        HandlerDefinition handler =
                definition(IdempotencyMode.LEASE).budget("small").build();
        List<List<Integer>> runs = new java.util.ArrayList<>();

        assertThatThrownBy(() -> budgeted.executeBatch(
                        handler,
                        List.of(message("p-0"), message("p-1"), message("p-2"), message("p-3"), message("p-4")),
                        runs::add))
                .isInstanceOfSatisfying(BatchFailedException.class, ex -> {
                    assertThat(ex.index()).isEqualTo(3);
                    assertThat(ex.getCause())
                            .isInstanceOfSatisfying(
                                    BudgetExhaustedException.class,
                                    cause -> assertThat(cause.isRetryable()).isTrue());
                });

        assertThat(runs).containsExactly(List.of(0, 1, 2));
        assertThat(completedRows()).isEqualTo(3);
        assertThat(row("p-3")).isEmpty();
        assertThat(budgets.budget("small").spent()).isEqualTo(3);
    }

    @Test
    void handlersWithoutABudgetAreNotAffected() throws Exception {
        budgets.update("stripe", BudgetConfig.of(1, Duration.ofHours(1)));
        budgets.budget("stripe").call(() -> "spend it");
        assertThat(budgeted.execute(lease(), message("free"), () -> "ran").outcome())
                .isEqualTo(MessageOutcome.PROCESSED);
    }

    @Test
    void anUnknownBudgetIsAClearError() {
        assertThatThrownBy(() -> budgeted.execute(bound("nope"), message("m"), () -> "x"))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("sumi.budgets.nope.limit");
    }
}
