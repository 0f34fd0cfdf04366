package io.sumi.consumer;

import io.sumi.consumer.exception.FingerprintMismatchException;
import io.sumi.consumer.exception.IdempotencyException;
import io.sumi.consumer.exception.MessageBusyException;
import io.sumi.consumer.exception.ReconciliationRequiredException;
import io.sumi.store.ClaimOutcome;
import io.sumi.store.ClaimRequest;
import io.sumi.store.ClaimResult;
import io.sumi.store.MessageStatus;
import io.sumi.store.ProcessedMessage;
import io.sumi.store.ProcessedMessageStore;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Objects;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a claim's ledger row means for its message, shared by both modes: the fingerprint check,
 * the refusals ({@link MessageBusyException}, {@link ReconciliationRequiredException},
 * {@link FingerprintMismatchException}) with their texts, the uncertain-outcome rule of lease mode,
 * and giving a single claim back. Counts nothing but events: outcomes are the caller's.
 */
final class ClaimVerdicts {

    private static final Logger log = LoggerFactory.getLogger(DefaultIdempotentExecutor.class);

    private final ProcessedMessageStore store;
    private final OutcomeRecorder recorder;
    private final @Nullable Duration reconcileAfter;
    private final KeptReplies replies;

    ClaimVerdicts(ProcessedMessageStore store, OutcomeRecorder recorder, @Nullable Duration reconcileAfter) {
        this.store = store;
        this.recorder = recorder;
        this.reconcileAfter = reconcileAfter;
        this.replies = new KeptReplies(store, recorder);
    }

    /** The replies of handlers that keep them. */
    KeptReplies replies() {
        return replies;
    }

    /**
     * A claim that did not give us the message: a row awaiting reconciliation or a live claim
     * elsewhere throws; a completed row is a duplicate (after its fingerprint is checked), answered
     * with its kept reply when the handler keeps replies.
     */
    <T> HandlerResult<T> notClaimed(HandlerDefinition handler, ClaimRequest request, ClaimResult claim) {
        if (claim.message().status() == MessageStatus.RECONCILE) {
            throw awaitingReconciliation(handler, claim.message());
        }
        if (claim.outcome() == ClaimOutcome.BUSY) {
            throw busy(handler, claim.message());
        }
        checkFingerprint(handler, request, claim.message());
        recorder.skippedDuplicate(
                handler.consumer(), request.messageId(), claim.message().processedAt());
        return replies.duplicate(handler, request.messageId());
    }

    /**
     * Logs and counts a fingerprint that differs from the ledger's, then throws if the handler's
     * policy rejects it.
     *
     * @throws FingerprintMismatchException if the fingerprints differ and the policy is REJECT
     */
    void checkFingerprint(HandlerDefinition handler, ClaimRequest request, ProcessedMessage row) {
        if (!BatchPlan.fingerprintsDiffer(request, row)) {
            return;
        }
        FingerprintMismatchException rejection = reportMismatch(handler, request, row);
        if (rejection != null) {
            throw rejection;
        }
    }

    /**
     * Logs and counts a fingerprint mismatch found while planning; returns the exception to stop
     * at if the handler's policy rejects it, {@code null} if the message is treated as the same.
     */
    @Nullable
    FingerprintMismatchException reportMismatch(HandlerDefinition handler, ClaimRequest request, ProcessedMessage row) {
        String expected = String.valueOf(row.fingerprint());
        String actual = String.valueOf(request.fingerprint());
        recorder.fingerprintMismatch(handler.consumer());
        String text = "Key '" + request.messageId() + "' of consumer '" + handler.consumer()
                + "' arrived with another payload than the first time (fingerprint " + abbreviate(actual)
                + ", ledger has "
                + abbreviate(expected) + "): a producer reused the key for another message";
        if (handler.fingerprintPolicy() == FingerprintMismatchPolicy.REJECT) {
            log.warn("{}; rejecting it", text);
            return new FingerprintMismatchException(text);
        }
        log.warn("{}; treating it as the same message", text);
        return null;
    }

    /**
     * Reports the fingerprint mismatches of a batch plan (log and count) and returns the exception
     * its stop stands for; an uncertain takeover is marked {@code RECONCILE} here (the one ledger
     * write of planning). {@code null} if the plan does not stop.
     */
    @Nullable
    IdempotencyException stopOf(
            HandlerDefinition handler, List<ClaimRequest> requests, List<ClaimResult> results, BatchPlan plan) {
        FingerprintMismatchException rejection = null;
        for (int i : plan.mismatches()) {
            rejection = reportMismatch(handler, requests.get(i), results.get(i).message());
        }
        BatchPlan.Stop reason = plan.stopReason();
        if (reason == null) {
            return null;
        }
        ProcessedMessage row = results.get(plan.stop()).message();
        return switch (reason) {
            case AWAITING_RECONCILIATION -> awaitingReconciliation(handler, row);
            case BUSY -> busy(handler, row);
            // With the REJECT policy the first mismatch stops the batch: it is the last one reported.
            case FINGERPRINT_REJECTED -> Objects.requireNonNull(rejection, "rejection");
            case UNCERTAIN -> markUncertain(handler, row);
        };
    }

    /** The handler's reconcile-after window, else the executor's; {@code null} or zero: none. */
    @Nullable
    Duration reconcileWindow(HandlerDefinition handler) {
        return handler.reconcileAfter() != null ? handler.reconcileAfter() : reconcileAfter;
    }

    /**
     * Whether a lease-mode claim takes over a message first claimed longer ago than the window:
     * running it again could repeat an effect the provider no longer deduplicates. Age is measured
     * on the ledger's clock ({@code leaseUntil - lease} is the ledger's "now" at the claim), so an
     * executor and a store with different clocks cannot disagree about it.
     */
    static boolean isUncertain(@Nullable Duration window, Duration lease, ProcessedMessage row) {
        if (window == null
                || window.isZero()
                || row.status() != MessageStatus.IN_PROGRESS
                || row.attempts() < 2
                || row.leaseUntil() == null) {
            return false;
        }
        Instant now = row.leaseUntil().minus(lease);
        return !row.firstSeenAt().plus(window).isAfter(now);
    }

    /**
     * Marks an uncertain claim {@code RECONCILE} (see {@link #isUncertain}) and returns the
     * exception to throw: {@link ReconciliationRequiredException}, or {@link MessageBusyException}
     * if the claim was lost between the claim and the mark.
     */
    IdempotencyException markUncertain(HandlerDefinition handler, ProcessedMessage row) {
        Duration window = reconcileWindow(handler);
        String text = "Key '" + row.messageId() + "' of consumer '" + handler.consumer() + "' was first claimed at "
                + row.firstSeenAt() + " and never completed (attempt " + row.attempts() + ", last error: "
                + row.lastError()
                + "); that is longer ago than the provider's idempotency-key window (" + window
                + "), so running it again could"
                + " repeat its effect. Marked RECONCILE and not run: check the provider for this key, then complete or delete"
                + " the ledger row";
        boolean marked;
        try {
            marked = store.markForReconciliation(
                    row,
                    "RECONCILE: uncertain outcome after " + window
                            + (row.lastError() != null ? "; last error: " + row.lastError() : ""));
        } catch (UnsupportedOperationException ex) {
            log.error(
                    "{}; the ledger cannot hold it for reconciliation ({}), so it is only released",
                    text,
                    ex.getMessage());
            releaseQuietly(row, new IllegalStateException(text));
            marked = true;
        }
        if (!marked) {
            // Lost the claim between the two statements: whoever holds it now decides.
            return busy(handler, row);
        }
        recorder.reconcileMarked(handler.consumer());
        log.error(text);
        return new ReconciliationRequiredException(handler.consumer(), row.messageId(), text);
    }

    /** Gives one claim back so a redelivery can claim it at once; a failing release is attached to {@code failure}. */
    void releaseQuietly(ProcessedMessage claim, Throwable failure) {
        try {
            store.release(claim, summary(failure));
        } catch (RuntimeException ex) {
            // The original failure matters more; the lease will expire on its own.
            failure.addSuppressed(ex);
        }
    }

    /**
     * Gives back one claim whose handler never started ({@link ProcessedMessageStore#releaseUnrun}):
     * it counts no attempt and cannot make the message look uncertain later; a failing release is
     * attached to {@code failure}.
     */
    void releaseUnrunQuietly(ProcessedMessage claim, Throwable failure) {
        try {
            store.releaseUnrun(claim.consumer(), claim.claimToken(), List.of(claim.messageId()));
        } catch (RuntimeException ex) {
            // The original failure matters more; the lease will expire on its own.
            failure.addSuppressed(ex);
        }
    }

    static ReconciliationRequiredException awaitingReconciliation(HandlerDefinition handler, ProcessedMessage row) {
        return new ReconciliationRequiredException(
                handler.consumer(),
                row.messageId(),
                "Key '" + row.messageId()
                        + "' of consumer '" + handler.consumer()
                        + "' awaits reconciliation (ledger status RECONCILE since an uncertain"
                        + " outcome; " + row.lastError()
                        + "): it is not run until an operator completes or deletes its ledger row");
    }

    static MessageBusyException busy(HandlerDefinition handler, ProcessedMessage holder) {
        return new MessageBusyException(
                "Key '" + holder.messageId() + "' of consumer '" + handler.consumer()
                        + "' is being processed by another consumer (attempt " + holder.attempts() + ", lease until "
                        + holder.leaseUntil() + "); it must be delivered again later",
                holder.claimToken(),
                holder.leaseUntil());
    }

    static String summary(Throwable failure) {
        return failure.getClass().getName() + (failure.getMessage() != null ? ": " + failure.getMessage() : "");
    }

    private static String abbreviate(String fingerprint) {
        return fingerprint.length() > 12 ? fingerprint.substring(0, 12) + "…" : fingerprint;
    }
}
