package io.sumi.autoconfigure.actuate;

import static org.assertj.core.api.Assertions.assertThat;

import io.sumi.budget.BudgetConfig;
import io.sumi.budget.BudgetRegistry;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;

/**
 * The budgets' health indicator, one test per state: every budget closed, and one open. An open
 * budget is reported in the details and counted, never turned into a failing status (a consumer
 * paused by its budget is doing what it should).
 */
@SuppressWarnings("unchecked") // the details of each budget are a Map<String, Object>
class SumiBudgetsHealthIndicatorTests {

    private final BudgetRegistry budgets = BudgetRegistry.builder()
            .budget("stripe", BudgetConfig.of(3, Duration.ofHours(1)))
            .budget("openai", BudgetConfig.of(100, Duration.ofMinutes(10)))
            .build();
    private final SumiBudgetsHealthIndicator indicator = new SumiBudgetsHealthIndicator(budgets);

    @Test
    void everyBudgetClosedIsUpWithEachBudgetsState() {
        Health health = indicator.health();

        assertThat(health.getStatus()).isEqualTo(Status.UP);
        assertThat(health.getDetails()).containsEntry("notClosed", 0L).containsKeys("stripe", "openai");
        assertThat((Map<Object, Object>) health.getDetails().get("stripe"))
                .containsEntry("state", "CLOSED")
                .containsEntry("limit", 3.0)
                .containsEntry("window", "PT1H");
    }

    @Test
    void anOpenBudgetIsReportedAndCountedButStaysUp() {
        budgets.find("stripe").orElseThrow().forceOpen();

        Health health = indicator.health();

        assertThat(health.getStatus()).isEqualTo(Status.UP);
        assertThat(health.getDetails()).containsEntry("notClosed", 1L);
        assertThat(((Map<?, ?>) health.getDetails().get("stripe")).get("state")).isNotEqualTo("CLOSED");
        assertThat((Map<Object, Object>) health.getDetails().get("openai")).containsEntry("state", "CLOSED");
    }
}
