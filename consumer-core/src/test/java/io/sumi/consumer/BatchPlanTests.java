package io.sumi.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sumi.consumer.BatchPlan.Stop;
import io.sumi.store.ClaimOutcome;
import io.sumi.store.ClaimRequest;
import io.sumi.store.ClaimResult;
import io.sumi.store.MessageStatus;
import io.sumi.store.ProcessedMessage;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * {@link BatchPlan#of} from plain claim results, without a ledger: which messages run, which are
 * duplicates, where the batch stops and why, and which claims are given back.
 */
class BatchPlanTests {

    static final long TOKEN = 42L;
    static final Instant NOW = Instant.parse("2026-03-01T10:00:00Z");
    static final Predicate<ProcessedMessage> NEVER_UNCERTAIN = row -> false;

    final List<ClaimRequest> requests = new ArrayList<>();
    final List<ClaimResult> results = new ArrayList<>();

    void add(String key, ClaimOutcome outcome) {
        add(
                key,
                null,
                outcome,
                outcome == ClaimOutcome.DUPLICATE ? MessageStatus.COMPLETED : MessageStatus.IN_PROGRESS,
                null);
    }

    void add(
            String key,
            @Nullable String fingerprint,
            ClaimOutcome outcome,
            MessageStatus status,
            @Nullable String ledgerFingerprint) {
        requests.add(new ClaimRequest(key, fingerprint));
        long token = outcome == ClaimOutcome.CLAIMED ? TOKEN : 7L;
        results.add(new ClaimResult(
                outcome,
                new ProcessedMessage(
                        "c", key, status, token, NOW.plusSeconds(300), 1, ledgerFingerprint, null, NOW, null)));
    }

    BatchPlan plan() {
        return plan(FingerprintMismatchPolicy.REJECT, NEVER_UNCERTAIN);
    }

    BatchPlan plan(FingerprintMismatchPolicy policy, Predicate<ProcessedMessage> uncertain) {
        return BatchPlan.of(requests, results, policy, uncertain);
    }

    @Test
    void claimedMessagesRunAndCompletedOnesAreDuplicates() {
        add("a", ClaimOutcome.CLAIMED);
        add("done", ClaimOutcome.DUPLICATE);
        add("b", ClaimOutcome.CLAIMED);

        BatchPlan plan = plan();

        assertThat(plan.run()).containsExactly(0, 2);
        assertThat(plan.runKeys()).containsExactly("a", "b");
        assertThat(plan.duplicates()).isEqualTo(1);
        assertThat(plan.stopped()).isFalse();
        assertThat(plan.stop()).isEqualTo(3);
        assertThat(plan.release()).isEmpty();
        assertThat(plan.token()).isEqualTo(TOKEN);
    }

    @Test
    void aKeyRepeatedInTheBatchRunsOnceAndCountsAsADuplicate() {
        add("a", ClaimOutcome.CLAIMED);
        add("a", ClaimOutcome.CLAIMED);

        BatchPlan plan = plan();

        assertThat(plan.run()).containsExactly(0);
        assertThat(plan.duplicates()).isEqualTo(1);
    }

    @Test
    void aLiveClaimElsewhereStopsTheBatchAndTheClaimsAfterItAreReleased() {
        add("a", ClaimOutcome.CLAIMED);
        add("busy", ClaimOutcome.BUSY);
        add("b", ClaimOutcome.CLAIMED);
        add("done", ClaimOutcome.DUPLICATE);

        BatchPlan plan = plan();

        assertThat(plan.stopReason()).isEqualTo(Stop.BUSY);
        assertThat(plan.stop()).isEqualTo(1);
        assertThat(plan.run()).containsExactly(0);
        assertThat(plan.release()).containsExactly("b");
        assertThat(plan.duplicates()).isZero();
    }

    @Test
    void aRowAwaitingReconciliationStopsTheBatchBeforeItsBusyOutcomeIsLookedAt() {
        add("a", ClaimOutcome.CLAIMED);
        add("r", null, ClaimOutcome.BUSY, MessageStatus.RECONCILE, null);

        BatchPlan plan = plan();

        assertThat(plan.stopReason()).isEqualTo(Stop.AWAITING_RECONCILIATION);
        assertThat(plan.stop()).isEqualTo(1);
        assertThat(plan.run()).containsExactly(0);
    }

    @Test
    void aRejectedFingerprintStopsTheBatchAndItsOwnClaimIsReleased() {
        add("a", ClaimOutcome.CLAIMED);
        add("b", "new", ClaimOutcome.CLAIMED, MessageStatus.IN_PROGRESS, "old");
        add("c", ClaimOutcome.CLAIMED);

        BatchPlan plan = plan();

        assertThat(plan.stopReason()).isEqualTo(Stop.FINGERPRINT_REJECTED);
        assertThat(plan.stop()).isEqualTo(1);
        assertThat(plan.mismatches()).containsExactly(1);
        assertThat(plan.release()).containsExactly("b", "c");
    }

    @Test
    void anAcceptedFingerprintMismatchIsReportedAndRuns() {
        add("a", ClaimOutcome.CLAIMED);
        add("done", "new", ClaimOutcome.DUPLICATE, MessageStatus.COMPLETED, "old");
        add("b", "new", ClaimOutcome.CLAIMED, MessageStatus.IN_PROGRESS, "old");

        BatchPlan plan = plan(FingerprintMismatchPolicy.WARN, NEVER_UNCERTAIN);

        assertThat(plan.stopped()).isFalse();
        assertThat(plan.mismatches()).containsExactly(1, 2);
        assertThat(plan.run()).containsExactly(0, 2);
        assertThat(plan.duplicates()).isEqualTo(1);
    }

    @Test
    void anUnknownFingerprintNeverDiffers() {
        add("a", null, ClaimOutcome.DUPLICATE, MessageStatus.COMPLETED, "old");
        add("b", "new", ClaimOutcome.DUPLICATE, MessageStatus.COMPLETED, null);

        assertThat(plan().mismatches()).isEmpty();
    }

    @Test
    void anUncertainTakeoverStopsTheBatchAtItsFirstOccurrence() {
        add("a", ClaimOutcome.CLAIMED);
        add("old", ClaimOutcome.CLAIMED);
        add("b", ClaimOutcome.CLAIMED);

        BatchPlan plan =
                plan(FingerprintMismatchPolicy.REJECT, row -> row.messageId().equals("old"));

        assertThat(plan.stopReason()).isEqualTo(Stop.UNCERTAIN);
        assertThat(plan.stop()).isEqualTo(1);
        assertThat(plan.run()).containsExactly(0);
        assertThat(plan.release()).containsExactly("old", "b");
    }

    @Test
    void aStopAtTheFirstMessageRunsNothingAndReleasesEveryClaim() {
        add("busy", ClaimOutcome.BUSY);
        add("a", ClaimOutcome.CLAIMED);
        add("a", ClaimOutcome.CLAIMED);

        BatchPlan plan = plan();

        assertThat(plan.stop()).isZero();
        assertThat(plan.run()).isEmpty();
        assertThat(plan.release()).containsExactly("a");
    }

    @Test
    void anEmptyBatchPlansNothing() {
        BatchPlan plan = plan();

        assertThat(plan.stop()).isZero();
        assertThat(plan.stopped()).isFalse();
        assertThat(plan.run()).isEmpty();
        assertThat(plan.token()).isZero();
    }

    @Test
    void thePlanIsImmutable() {
        add("a", ClaimOutcome.CLAIMED);

        BatchPlan plan = plan();

        assertThatThrownBy(() -> plan.run().add(5)).isInstanceOf(UnsupportedOperationException.class);
        assertThatThrownBy(() -> plan.release().add("x")).isInstanceOf(UnsupportedOperationException.class);
    }
}
