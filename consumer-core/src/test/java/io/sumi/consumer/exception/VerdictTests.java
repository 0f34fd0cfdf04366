package io.sumi.consumer.exception;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** How the broker binders classify Sumi's refusals, wrapped as listener adapters wrap them. */
class VerdictTests {

    @Test
    void eachRefusalHasItsVerdictAndOnlyRejectionsAreNotRedelivered() {
        assertThat(Verdict.of(new MissingIdempotencyKeyException("no key"))).isEqualTo(Verdict.REJECT);
        assertThat(Verdict.of(new InvalidIdempotencyKeyException("bad key"))).isEqualTo(Verdict.REJECT);
        assertThat(Verdict.of(new MessageBusyException("busy"))).isEqualTo(Verdict.BUSY);
        assertThat(Verdict.of(new ReconciliationRequiredException("c", "k", "uncertain")))
                .isEqualTo(Verdict.RECONCILE);
        // sumi-budgets' BudgetExhaustedException is one of these: a refusal of another module says its verdict itself.
        assertThat(Verdict.of(new IdempotencyException("open") {
                    @Override
                    public Verdict verdict() {
                        return Verdict.BUDGET;
                    }

                    @Override
                    public boolean isRetryable() {
                        return true;
                    }
                }))
                .isEqualTo(Verdict.BUDGET);
        assertThat(Verdict.REJECT.redeliver()).isFalse();
        assertThat(Verdict.BUSY.redeliver()).isTrue();
    }

    @Test
    void aRefusalIsFoundInsideTheAdaptersWrappingButAHandlersOwnFailureIsNot() {
        MessageBusyException busy = new MessageBusyException("busy");
        assertThat(Verdict.find(new IllegalStateException("listener failed", busy)))
                .isSameAs(busy);
        assertThat(Verdict.find(new IllegalStateException("the handler's own", new java.io.IOException("io"))))
                .isNull();
        assertThat(Verdict.of(new IllegalStateException("the handler's own"))).isNull();
    }

    @Test
    void aBatchFailureCausedByARefusalIsTheVerdictAndOneCausedByTheHandlerIsNot() {
        BatchFailedException refused = new BatchFailedException(2, new MissingIdempotencyKeyException("no key"));
        assertThat(Verdict.find(new RuntimeException(refused))).isSameAs(refused);
        BatchFailedException failed = new BatchFailedException(
                1, new IllegalStateException("down", new MessageBusyException("not this one")));
        assertThat(Verdict.find(failed)).isNull();
    }
}
