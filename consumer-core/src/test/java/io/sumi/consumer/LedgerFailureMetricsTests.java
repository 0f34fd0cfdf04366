package io.sumi.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sumi.consumer.exception.BatchFailedException;
import io.sumi.consumer.exception.LedgerUnavailableException;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.dao.TransientDataAccessResourceException;

/**
 * {@code sumi.messages} counts a message whose ledger call fails once, as {@code failed}, in lease
 * mode as in transactional mode: a dropped connection must not make messages vanish from the
 * counts (before, a lease-mode claim or completion that threw counted nothing).
 */
class LedgerFailureMetricsTests extends H2ExecutorTestSupport {

    FailingOnceStore failing;
    IdempotentExecutor failingExecutor;

    @BeforeEach
    void failingStore() {
        failing = new FailingOnceStore(store);
        failingExecutor =
                IdempotentExecutor.builder(failing).meterRegistry(meters).build();
    }

    @Test
    void aLeaseClaimThatFailsCountsTheMessageLedgerUnavailableOnce() {
        failing.failNextClaim.set(true);

        assertThatThrownBy(() -> failingExecutor.execute(lease(), message("a"), () -> null))
                .isInstanceOf(LedgerUnavailableException.class)
                .hasCauseInstanceOf(TransientDataAccessResourceException.class);

        assertThat(outcomes()).containsExactlyEntriesOf(Map.of("ledger_unavailable", 1.0));
    }

    @Test
    void aLeaseCompletionThatFailsCountsTheMessageFailedOnceNotProcessed() {
        failing.failNextComplete.set(true);

        assertThatThrownBy(() -> failingExecutor.execute(lease(), message("a"), () -> null))
                .isInstanceOf(LedgerUnavailableException.class)
                .hasCauseInstanceOf(TransientDataAccessResourceException.class);

        assertThat(outcomes()).containsExactlyEntriesOf(Map.of("failed", 1.0));
    }

    @Test
    void aLeaseBatchWhoseClaimFailsCountsOneLedgerUnavailable() {
        failing.failNextClaim.set(true);

        assertThatThrownBy(
                        () -> failingExecutor.executeBatch(lease(), List.of(message("a"), message("b")), indexes -> {}))
                .isInstanceOf(BatchFailedException.class)
                .hasCauseInstanceOf(LedgerUnavailableException.class);

        assertThat(outcomes()).containsExactlyEntriesOf(Map.of("ledger_unavailable", 1.0));
    }
}
