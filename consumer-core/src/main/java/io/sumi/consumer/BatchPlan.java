package io.sumi.consumer;

import io.sumi.store.ClaimOutcome;
import io.sumi.store.ClaimRequest;
import io.sumi.store.ClaimResult;
import io.sumi.store.MessageStatus;
import io.sumi.store.ProcessedMessage;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.function.Predicate;
import org.jspecify.annotations.Nullable;

/**
 * What to do with a claimed batch, decided from the claim results alone: a pure function of the
 * requests, the results and the handler's rules ({@link #of}), so it is tested without a ledger.
 *
 * <p>Reading the results in order, the batch stops at the first message that must not run now
 * (a row awaiting reconciliation, a live claim elsewhere, a fingerprint the policy rejects, an
 * uncertain takeover); before it, the first occurrence of each {@code CLAIMED} key runs, and the
 * rest (completed rows, keys repeated in the batch) are duplicates.
 *
 * @param run the indexes the handler runs, ascending
 * @param runKeys the keys at {@link #run}, in the same order: the claims to complete
 * @param duplicates how many messages before {@link #stop} are duplicates
 * @param stop the index of the first message not done; the number of results if none stops the batch
 * @param stopReason why the batch stops at {@link #stop}; {@code null} if it does not
 * @param release the claims this batch took but does not run (at or after the stop), to give back
 * @param token the claim token of the batch's claims (one claim call: one token for all); 0 if none
 * @param mismatches the indexes, up to the stop, whose fingerprint differs from the ledger's
 */
record BatchPlan(
        List<Integer> run,
        List<String> runKeys,
        int duplicates,
        int stop,
        @Nullable Stop stopReason,
        List<String> release,
        long token,
        List<Integer> mismatches) {

    /** Why a batch stops before its end. */
    enum Stop {
        /** The row awaits reconciliation: not run until an operator settles it. */
        AWAITING_RECONCILIATION,
        /** Another consumer holds a live claim. */
        BUSY,
        /** The fingerprint differs from the ledger's and the handler's policy rejects it. */
        FINGERPRINT_REJECTED,
        /** A lease-mode takeover older than the reconcile-after window: to be marked RECONCILE, not run. */
        UNCERTAIN
    }

    BatchPlan {
        run = List.copyOf(run);
        runKeys = List.copyOf(runKeys);
        release = List.copyOf(release);
        mismatches = List.copyOf(mismatches);
    }

    /** Whether a message of the results stops the batch. */
    boolean stopped() {
        return stopReason != null;
    }

    /**
     * Plans a batch.
     *
     * @param requests the requests that were claimed, at least as many as {@code results}
     * @param results the claim results, one per request, in order
     * @param policy the handler's fingerprint policy
     * @param uncertain which {@code CLAIMED} rows are uncertain takeovers (lease mode; a transactional claim is
     *     inserted {@code COMPLETED}, which is never uncertain)
     */
    static BatchPlan of(
            List<ClaimRequest> requests,
            List<ClaimResult> results,
            FingerprintMismatchPolicy policy,
            Predicate<ProcessedMessage> uncertain) {
        List<Integer> run = new ArrayList<>();
        List<String> runKeys = new ArrayList<>();
        List<Integer> mismatches = new ArrayList<>();
        Set<String> claimed = new LinkedHashSet<>();
        Set<String> seen = new HashSet<>();
        int duplicates = 0;
        int stop = results.size();
        Stop stopReason = null;
        long token = 0L;
        for (int i = 0; i < results.size(); i++) {
            ClaimResult result = results.get(i);
            if (result.outcome() == ClaimOutcome.CLAIMED) {
                claimed.add(requests.get(i).messageId());
                token = result.message().claimToken();
            }
        }
        for (int i = 0; i < results.size(); i++) {
            ClaimResult result = results.get(i);
            ClaimRequest request = requests.get(i);
            ProcessedMessage row = result.message();
            if (row.status() == MessageStatus.RECONCILE) {
                stopReason = Stop.AWAITING_RECONCILIATION;
            } else if (result.outcome() == ClaimOutcome.BUSY) {
                stopReason = Stop.BUSY;
            } else if (fingerprintsDiffer(request, row)) {
                mismatches.add(i);
                if (policy == FingerprintMismatchPolicy.REJECT) {
                    stopReason = Stop.FINGERPRINT_REJECTED;
                }
            }
            // The first occurrence of a key this batch claimed runs; a repeated key is a duplicate.
            boolean firstClaim =
                    stopReason == null && result.outcome() == ClaimOutcome.CLAIMED && seen.add(request.messageId());
            if (firstClaim && uncertain.test(row)) {
                stopReason = Stop.UNCERTAIN;
            }
            if (stopReason != null) {
                stop = i;
                break;
            }
            if (firstClaim) {
                run.add(i);
                runKeys.add(request.messageId());
            } else {
                duplicates++;
            }
        }
        runKeys.forEach(claimed::remove);
        return new BatchPlan(run, runKeys, duplicates, stop, stopReason, new ArrayList<>(claimed), token, mismatches);
    }

    /** Whether a payload's fingerprint differs from the ledger's (an unknown one never differs). */
    static boolean fingerprintsDiffer(ClaimRequest request, ProcessedMessage row) {
        String expected = row.fingerprint();
        String actual = request.fingerprint();
        return expected != null && actual != null && !expected.equals(actual);
    }
}
