package io.sumi.consumer;

import io.sumi.consumer.IdempotentExecutor.BatchBody;
import io.sumi.consumer.IdempotentExecutor.HandlerBody;
import io.sumi.consumer.OutcomeRecorder.HandlerRun;
import io.sumi.consumer.exception.BatchFailedException;
import io.sumi.consumer.exception.FingerprintMismatchException;
import io.sumi.consumer.exception.IdempotencyException;
import io.sumi.consumer.exception.MessageBusyException;
import io.sumi.store.ClaimOutcome;
import io.sumi.store.ClaimRequest;
import io.sumi.store.ClaimResult;
import io.sumi.store.ProcessedMessage;
import io.sumi.store.ProcessedMessageStore;
import io.sumi.store.StoredReply;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.IntFunction;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Lease mode: claim {@code IN_PROGRESS} with a lease (each ledger call commits on its own), run the
 * handler outside any ledger transaction, then complete the claim, or release it on failure.
 *
 * <p>Concurrency: two deliveries of one key race in the ledger's one-statement claim; one gets
 * {@code CLAIMED}, the other {@code BUSY} until the first completes or releases, or its lease ends
 * (then it takes the message over: attempt 2). Completing and releasing are fenced on the claim
 * token, so a consumer whose lease was taken over changes nothing of the new owner's claim; a
 * completion that finds the claim gone is counted as a lost lease (the handler ran twice), and
 * the row is read again: the message counts as done only if the taker completed it, else a
 * retryable {@link MessageBusyException} (a batch: stopped at that message) has it delivered again.
 *
 * <p>What is released when. A record: its claim is released when the handler throws or its
 * fingerprint is rejected; if completing throws, the claim stays leased and the redelivery runs it
 * again once the lease ends. A batch holds every claim it took until each is completed or released
 * ({@link HeldClaims}): the claims at or after a stop are released before the handler runs, the
 * ones the handler ran are completed after it, and on every other way out (the handler fails, it
 * reports a failed message, a ledger call throws) everything still held is released, a failing
 * release tried once more: a claim left leased would make every redelivery BUSY for the whole lease.
 *
 * <p>Renewal: while the handler runs, its claims are renewed from another thread
 * ({@link LeaseRenewer}), every third of the lease, up to the handler's max run time; renewal
 * stops when the handler returns or throws, before anything is completed or released. A lease
 * is therefore lost only when this JVM stops renewing (frozen, dead, or the ledger unreachable
 * for a whole lease) or the handler outruns its max run time.
 *
 * <p>Uncertain outcomes: a takeover whose message was first claimed longer ago than the
 * reconcile-after window is not run but marked {@code RECONCILE} (see {@link ClaimVerdicts#isUncertain}).
 */
final class LeaseExecution {

    private static final Logger log = LoggerFactory.getLogger(DefaultIdempotentExecutor.class);

    private final ProcessedMessageStore store;
    private final ClaimVerdicts verdicts;
    private final OutcomeRecorder recorder;
    private final LeaseRenewer renewer;

    LeaseExecution(
            ProcessedMessageStore store, ClaimVerdicts verdicts, OutcomeRecorder recorder, LeaseRenewer renewer) {
        this.store = store;
        this.verdicts = verdicts;
        this.recorder = recorder;
        this.renewer = renewer;
    }

    // ---------------------------------------------------------------- one message

    // The scope is a guard: try-with-resources closes it; the body never names it.
    @SuppressWarnings("try")
    <T> HandlerResult<T> execute(HandlerDefinition handler, ClaimRequest request, HandlerBody<T> body, HandlerRun run)
            throws Exception {
        ClaimResult claim = store.claim(handler.consumer(), request, handler.lease());
        if (claim.outcome() != ClaimOutcome.CLAIMED) {
            return verdicts.notClaimed(handler, request, claim);
        }
        ProcessedMessage row = toRun(handler, request, claim);
        T value;
        StoredReply reply;
        // Resources close before the catch block runs: renewal has stopped before the claim is
        // released, and before it is completed below.
        try (LeaseRenewer.Renewal renewal = renewer.start(handler, row.claimToken(), List.of(request.messageId()));
                CurrentIdempotencyContext.Scope scope = CurrentIdempotencyContext.open(new IdempotencyContext(
                        request.messageId(), handler.consumer(), row.attempts(), IdempotencyMode.LEASE))) {
            value = run.run(body);
            // A reply too large to keep fails the message here, before anything is completed.
            reply = verdicts.replies().toKeep(handler, request.messageId(), value);
        } catch (Exception | Error ex) {
            // Release so the redelivery can claim at once; the exception itself goes on unchanged.
            verdicts.releaseQuietly(row, ex);
            throw ex;
        }
        // If completing fails, the exception propagates: the message is redelivered and, once the
        // lease has expired, run again with the same key (which the provider deduplicates). A kept
        // reply is written by the completing statement itself: the row is never COMPLETED without it.
        boolean done = reply == null ? store.complete(row) : store.complete(row, reply);
        if (done) {
            verdicts.replies().kept(handler, reply);
        } else {
            // The lease ended while the handler ran and another consumer took the message over.
            // Acked only if the taker completed it: otherwise (it failed, died or still runs) the
            // ack would drop a message whose row is not COMPLETED.
            leaseLost(handler.consumer(), 1, request.messageId());
            if (!completed(handler.consumer(), request.messageId())) {
                throw lostBeforeCompletion(handler, request.messageId());
            }
        }
        return new HandlerResult<>(MessageOutcome.PROCESSED, value);
    }

    /**
     * The row of a {@code CLAIMED} claim, once the handler may run on it: a rejected fingerprint is
     * given back without counting an attempt (the handler never started) and thrown; an uncertain
     * takeover is marked {@code RECONCILE} and thrown.
     */
    private ProcessedMessage toRun(HandlerDefinition handler, ClaimRequest request, ClaimResult claim) {
        ProcessedMessage row = claim.message();
        try {
            verdicts.checkFingerprint(handler, request, row);
        } catch (FingerprintMismatchException ex) {
            verdicts.releaseUnrunQuietly(row, ex);
            throw ex;
        }
        if (ClaimVerdicts.isUncertain(verdicts.reconcileWindow(handler), handler.lease(), row)) {
            throw verdicts.markUncertain(handler, row);
        }
        return row;
    }

    /**
     * Runs an asynchronous handler ({@link io.sumi.consumer.IdempotentExecutor#executeAsync}): the
     * claim is taken and the body runs here, on the caller's thread (the context is current while it
     * runs); the renewal stays open until the handler's future completes, and is closed before the
     * claim is completed or released, on the thread that completes the future. The returned future
     * completes only after that.
     */
    // The scope is a guard: try-with-resources closes it; the body never names it.
    @SuppressWarnings("try")
    <T> CompletableFuture<HandlerResult<T>> executeAsync(
            HandlerDefinition handler, ClaimRequest request, HandlerBody<CompletionStage<T>> body, HandlerRun run)
            throws Exception {
        ClaimResult claim = store.claim(handler.consumer(), request, handler.lease());
        if (claim.outcome() != ClaimOutcome.CLAIMED) {
            return CompletableFuture.completedFuture(verdicts.notClaimed(handler, request, claim));
        }
        ProcessedMessage row = toRun(handler, request, claim);
        LeaseRenewer.Renewal renewal = renewer.start(handler, row.claimToken(), List.of(request.messageId()));
        CompletionStage<T> stage;
        try (CurrentIdempotencyContext.Scope scope = CurrentIdempotencyContext.open(new IdempotencyContext(
                request.messageId(), handler.consumer(), row.attempts(), IdempotencyMode.LEASE))) {
            stage = run.run(body);
        } catch (Exception | Error ex) {
            renewal.close();
            verdicts.releaseQuietly(row, ex);
            throw ex;
        }
        CompletableFuture<T> work =
                stage != null ? stage.toCompletableFuture() : CompletableFuture.completedFuture(null);
        CompletableFuture<HandlerResult<T>> done = new CompletableFuture<>();
        // Every path completes done, an unforeseen throw too: the container must never wait for a
        // future nobody completes.
        CompletableFuture<?> unused = work.whenComplete((value, failure) -> {
            try {
                // Renewal stops before the row is completed or released, as for a synchronous handler.
                renewal.close();
                if (failure != null) {
                    Throwable cause;
                    try {
                        cause = IdempotentExecutor.rethrowable(failure);
                    } catch (Error error) {
                        cause = error;
                    }
                    verdicts.releaseQuietly(row, cause);
                    done.completeExceptionally(cause);
                    return;
                }
                try {
                    if (!store.complete(row)) {
                        leaseLost(handler.consumer(), 1, request.messageId());
                        if (!completed(handler.consumer(), request.messageId())) {
                            throw lostBeforeCompletion(handler, request.messageId());
                        }
                    }
                    done.complete(new HandlerResult<>(MessageOutcome.PROCESSED, value));
                } catch (RuntimeException | Error ex) {
                    // Not completed: the message is delivered again (the container does not ack a failed future).
                    done.completeExceptionally(ex);
                }
            } catch (RuntimeException | Error unexpected) {
                done.completeExceptionally(unexpected);
            }
        });
        return done;
    }

    // ---------------------------------------------------------------- batches

    /**
     * Runs a batch whose {@code requests} all have usable keys; {@code keyStop} is why the batch
     * ends after them (a message without a usable key), if it does.
     */
    // The renewal is a guard: try-with-resources closes it; the body never names it.
    @SuppressWarnings("try")
    BatchRun executeBatch(
            HandlerDefinition handler,
            List<ClaimRequest> requests,
            @Nullable IdempotencyException keyStop,
            BatchBody body,
            HandlerRun run)
            throws Exception {
        String consumer = handler.consumer();
        List<ClaimResult> results =
                requests.isEmpty() ? List.of() : store.claimAll(consumer, requests, handler.lease());
        Duration window = verdicts.reconcileWindow(handler);
        BatchPlan plan = BatchPlan.of(
                requests,
                results,
                handler.fingerprintPolicy(),
                row -> ClaimVerdicts.isUncertain(window, handler.lease(), row));
        HeldClaims held = new HeldClaims(consumer, plan.token(), plan.runKeys(), plan.release());
        try {
            IdempotencyException refusal = verdicts.stopOf(handler, requests, results, plan);
            if (refusal != null) {
                recorder.refused(consumer, refusal);
            }
            int stop = plan.stop();
            Throwable cause = refusal != null ? refusal : keyStop;
            // Claims taken at or beyond the stop are not run now: give them back so the redelivery can
            // run them, without counting an attempt (their handler never started).
            held.releaseUnrun(plan.release());
            if (plan.run().isEmpty()) {
                recorder.skippedDuplicates(consumer, requests, results, plan);
                return new BatchRun(0, plan.duplicates(), stop, cause, null);
            }
            try (LeaseRenewer.Renewal renewal = renewer.start(handler, plan.token(), plan.runKeys())) {
                // Renewed while the handler runs, and stopped (closed) before anything is completed or released.
                run.run(body, plan.run());
            } catch (BatchFailedException reported) {
                // The handler says which message failed: the ones it ran before it are done.
                Throwable failure = causeOf(reported);
                return stopAt(
                        handler,
                        plan,
                        held,
                        reported.index(),
                        failure,
                        reported,
                        done -> new BatchRun(done, 0, reported.index(), failure, reported));
            } catch (NotDoneSignal notDone) {
                // The handler nacked from an index: as a reported failure there, except that
                // nothing is thrown (the dispatcher returns the index, the container seeks back).
                return stopAt(
                        handler,
                        plan,
                        held,
                        notDone.index(),
                        notDone,
                        notDone,
                        done -> new BatchRun(
                                done,
                                duplicatesBefore(plan, notDone.index()),
                                Math.min(notDone.index(), stop),
                                notDone,
                                null));
            }
            List<String> notCompleted = held.complete(plan.runKeys());
            if (!notCompleted.isEmpty()) {
                return stopAtLost(handler, plan, notCompleted);
            }
            recorder.skippedDuplicates(consumer, requests, results, plan);
            return new BatchRun(plan.run().size(), plan.duplicates(), stop, cause, null);
        } catch (Exception | Error ex) {
            // Attempt to release everything not completed; the original error goes on unchanged.
            held.releaseRest(ex, ex);
            throw ex;
        }
    }

    /**
     * The batch stops at {@code index}, where the handler reported a failure or nacked: the messages
     * it ran before the index are completed, every other claim it holds is released with
     * {@code failure} as the reason.
     *
     * @param signal what the handler threw to say so
     * @param stopped the batch's result from the number of messages completed, if none of them was lost
     */
    private BatchRun stopAt(
            HandlerDefinition handler,
            BatchPlan plan,
            HeldClaims held,
            int index,
            Throwable failure,
            Exception signal,
            IntFunction<BatchRun> stopped) {
        List<String> done = new ArrayList<>();
        for (int k = 0; k < plan.run().size() && plan.run().get(k) < index; k++) {
            done.add(plan.runKeys().get(k));
        }
        List<String> notCompleted;
        try {
            notCompleted = held.complete(done);
        } catch (RuntimeException completeFailed) {
            // The index would tell the container that the messages before it are done, and it
            // would ack them; their rows are not COMPLETED (and are released here), so a later
            // copy would run them again with nothing recording that they ran. The ledger's error
            // goes instead, with the handler's signal attached: the whole batch is delivered again
            // (the handler ran them with their keys, which the provider deduplicates).
            completeFailed.addSuppressed(signal);
            held.releaseRest(failure, completeFailed);
            throw completeFailed;
        }
        held.releaseRest(failure, signal);
        if (!notCompleted.isEmpty()) {
            return stopAtLost(handler, plan, notCompleted);
        }
        return stopped.apply(done.size());
    }

    /** The messages before {@code index} (and before the plan's stop) that the batch did not run: duplicates. */
    private static int duplicatesBefore(BatchPlan plan, int index) {
        int duplicates = 0;
        for (int i = 0; i < index && i < plan.stop(); i++) {
            if (!plan.run().contains(i)) {
                duplicates++;
            }
        }
        return duplicates;
    }

    /**
     * The batch stops at the first message it ran whose claim was taken over and is not COMPLETED:
     * the ones before it are done (completed by this call or by their takers, or duplicates), it
     * and the ones after it are delivered again.
     */
    private BatchRun stopAtLost(HandlerDefinition handler, BatchPlan plan, List<String> notCompleted) {
        int j = 0;
        while (!notCompleted.contains(plan.runKeys().get(j))) {
            j++;
        }
        int index = plan.run().get(j);
        // The handler ran for it, and it is not done.
        recorder.message(handler.consumer(), OutcomeRecorder.Outcome.FAILED);
        // Every message before the stop that the batch did not run is a duplicate.
        return new BatchRun(
                j,
                index - j,
                index,
                lostBeforeCompletion(handler, plan.runKeys().get(j)),
                null);
    }

    /** Whether the ledger's row of {@code key} is COMPLETED (read again, after a completion found the claim gone). */
    private boolean completed(String consumer, String key) {
        return store.find(consumer, key).map(ProcessedMessage::isCompleted).orElse(false);
    }

    private static MessageBusyException lostBeforeCompletion(HandlerDefinition handler, String key) {
        return new MessageBusyException("The lease of message '" + key + "' of consumer '" + handler.consumer()
                + "' was lost to another consumer before completion (its lease of " + handler.lease()
                + " ran out: the handler ran past its max run time, or its renewals did not reach the ledger);"
                + " the message will be delivered again");
    }

    private static Throwable causeOf(BatchFailedException reported) {
        return reported.getCause() != null ? reported.getCause() : reported;
    }

    /**
     * The claims one batch call holds: each is completed or released before the call ends. One
     * instance per call, used by one thread.
     */
    private final class HeldClaims {

        private final String consumer;
        private final long token;
        private final Set<String> keys = new LinkedHashSet<>();

        HeldClaims(String consumer, long token, List<String> run, List<String> notRun) {
            this.consumer = consumer;
            this.token = token;
            keys.addAll(run);
            keys.addAll(notRun);
        }

        /**
         * Completes {@code done}, trying once more if the ledger call fails (the handler ran: a
         * completion saves running it again); what is completed (or was lost to a takeover) is no
         * longer held.
         *
         * @return the keys whose claims were taken over and whose rows are not COMPLETED (their
         *     takers failed, died or still run), in the order of {@code done}
         */
        List<String> complete(List<String> done) {
            if (done.isEmpty()) {
                return List.of();
            }
            List<String> notCompleted;
            try {
                notCompleted = completeAll(done);
            } catch (RuntimeException first) {
                try {
                    notCompleted = completeAll(done);
                } catch (RuntimeException second) {
                    first.addSuppressed(second);
                    throw first;
                }
            }
            done.forEach(keys::remove);
            return notCompleted;
        }

        private List<String> completeAll(List<String> done) {
            int completed = store.completeAll(consumer, token, done);
            if (completed == done.size()) {
                return List.of();
            }
            // Some claims were taken over while the handler ran: read their rows again to see
            // which the takers completed (acked as done) and which they did not (delivered again).
            List<String> notCompleted = new ArrayList<>();
            for (String key : done) {
                if (!completed(consumer, key)) {
                    notCompleted.add(key);
                }
            }
            leaseLost(consumer, done.size() - completed, notCompleted.isEmpty() ? done.get(0) : notCompleted.get(0));
            return notCompleted;
        }

        /**
         * Gives back claims that are not run, counting no attempt ({@link ProcessedMessageStore#releaseUnrun});
         * if the ledger call throws, they stay held (for {@link #releaseRest}).
         */
        void releaseUnrun(List<String> notRun) {
            if (notRun.isEmpty()) {
                return;
            }
            store.releaseUnrun(consumer, token, notRun);
            notRun.forEach(keys::remove);
        }

        /**
         * Releases everything still held with {@code failure} as the reason; if the ledger call
         * fails, it is tried once more, then attached to {@code thrown} (the exception going on):
         * the leases expire on their own.
         */
        void releaseRest(Throwable failure, Throwable thrown) {
            if (keys.isEmpty()) {
                return;
            }
            Collection<String> rest = List.copyOf(keys);
            keys.clear();
            for (int attempt = 1; attempt <= 2; attempt++) {
                try {
                    store.releaseAll(consumer, token, rest, ClaimVerdicts.summary(failure));
                    return;
                } catch (RuntimeException ex) {
                    // Once more: a claim left leased makes every redelivery BUSY for the whole lease.
                    if (ex != thrown) {
                        thrown.addSuppressed(ex);
                    }
                }
            }
        }
    }

    private void leaseLost(String consumer, int count, String example) {
        recorder.leaseLost(consumer, count);
        log.warn(
                "Consumer '{}' lost the lease of {} message(s) to another consumer while its handler ran (e.g. {}); the"
                        + " handler ran more than once for them, and a message its taker did not complete is delivered again."
                        + " The lease ran out: the handler ran past its max run time, or its renewals did not reach the ledger",
                consumer,
                count,
                example);
    }
}
