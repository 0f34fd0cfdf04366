package io.sumi.budget;

import static org.assertj.core.api.Assertions.assertThat;

import io.sumi.consumer.exception.BatchFailedException;
import io.sumi.consumer.exception.Verdict;
import org.junit.jupiter.api.Test;

/** A budget refusal as the binders classify it: by the verdict the exception gives itself. */
class BudgetExhaustedExceptionTests {

    @Test
    void aBudgetRefusalIsTheBudgetVerdictAndIsRedelivered() {
        BudgetExhaustedException refusal =
                new BudgetExhaustedException("api", BudgetExhaustedException.Reason.CIRCUIT_OPEN, 0, 1, null, "open");

        assertThat(Verdict.of(refusal)).isEqualTo(Verdict.BUDGET);
        assertThat(Verdict.BUDGET.redeliver()).isTrue();
        assertThat(Verdict.find(new IllegalStateException("listener failed", refusal)))
                .isSameAs(refusal);
        BatchFailedException rest = new BatchFailedException(3, refusal);
        assertThat(Verdict.find(new RuntimeException(rest))).isSameAs(rest);
    }
}
