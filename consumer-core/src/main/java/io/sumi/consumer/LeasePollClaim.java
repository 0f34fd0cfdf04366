package io.sumi.consumer;

import io.micrometer.observation.Observation;
import io.sumi.consumer.IdempotentExecutor.HandlerBody;
import io.sumi.consumer.OutcomeRecorder.HandlerRun;
import io.sumi.consumer.OutcomeRecorder.Outcome;
import io.sumi.consumer.exception.FingerprintMismatchException;
import io.sumi.consumer.exception.MessageBusyException;
import io.sumi.store.ClaimOutcome;
import io.sumi.store.ClaimRequest;
import io.sumi.store.ClaimResult;
import io.sumi.store.MessageStatus;
import io.sumi.store.ProcessedMessage;
import io.sumi.store.ProcessedMessageStore;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The lease-mode claims of one poll ({@link PollClaim}), taken with one {@code claimAll}.
 *
 * <p>Each key of the poll is in one state: {@code HELD} (claimed, not run), {@code PENDING} (run,
 * completion kept), {@code DONE} (completion written), {@code RELEASED} (given back after a
 * failure, or never ours: the poll's claim found it busy or awaiting reconciliation). A message
 * whose key is {@code PENDING} or {@code DONE} is a duplicate (completed before the poll, or run
 * earlier in it: the ordinary path would find that one's row completed); one whose key is {@code RELEASED}, or that
 * had no usable key, takes the executor's ordinary path, so its refusal or fresh claim is exactly
 * what a record gets without the poll claim.
 *
 * <p>Renewal: the claims still {@code HELD} or {@code PENDING} are renewed by the executor's
 * {@link LeaseRenewer} every third of the lease, from the poll's claim until {@link #releaseUnrun}
 * ends the poll (and at most the handler's max run time, counted from the poll's claim); a claim
 * leaves the renewal just before its completion or release is written.
 *
 * <p>Only the consumer thread uses an instance; the executor's counters are updated as
 * {@link DefaultIdempotentExecutor#execute} does, one outcome per message.
 */
final class LeasePollClaim implements PollClaim {

    private static final Logger log = LoggerFactory.getLogger(DefaultIdempotentExecutor.class);

    private enum Status {
        HELD,
        PENDING,
        DONE,
        RELEASED
    }

    /**
     * How long a record whose key another consumer held at the poll's claim waits for that holder
     * in place, in doubling steps from {@link #FIRST_BUSY_WAIT_MILLIS}, before it takes the
     * ordinary path (which answers BUSY while the key is still held). The holder is most often
     * another consumer's poll claim, which completes the key when its poll ends: a few tens of
     * milliseconds, where a BUSY costs the error handler's seek back of the rest of the poll and its
     * busy-retry interval (1 s by default).
     */
    static final long BUSY_WAIT_MILLIS = 120;

    static final long FIRST_BUSY_WAIT_MILLIS = 2;

    private static final class KeyState {
        final ClaimResult result;
        /** Another consumer held the key when the poll was claimed. */
        final boolean busyAtClaim;

        Status status;

        KeyState(ClaimResult result) {
            this.result = result;
            this.busyAtClaim = result.outcome() == ClaimOutcome.BUSY;
            // A completed row is a duplicate; a live claim elsewhere or a RECONCILE row is decided
            // again when its record is dispatched (the ordinary path), as without the poll claim.
            this.status = result.outcome() == ClaimOutcome.CLAIMED
                    ? Status.HELD
                    : result.outcome() == ClaimOutcome.DUPLICATE
                                    && result.message().isCompleted()
                            ? Status.DONE
                            : Status.RELEASED;
        }
    }

    private final DefaultIdempotentExecutor executor;
    private final ProcessedMessageStore store;
    private final ClaimVerdicts verdicts;
    private final OutcomeRecorder recorder;
    private final HandlerDefinition handler;
    private final List<? extends InboundMessage> messages;
    private final List<@Nullable ClaimRequest> requests;
    private final Map<String, KeyState> keys = new HashMap<>();
    private final long token;
    private final LeaseRenewer.Renewal renewal;

    /**
     * @param requests one per message, {@code null} where the message has no usable key
     * @param results one per non-null request, in order
     */
    LeasePollClaim(
            DefaultIdempotentExecutor executor,
            ProcessedMessageStore store,
            ClaimVerdicts verdicts,
            OutcomeRecorder recorder,
            HandlerDefinition handler,
            List<? extends InboundMessage> messages,
            List<@Nullable ClaimRequest> requests,
            List<ClaimResult> results,
            LeaseRenewer renewer) {
        this.executor = executor;
        this.store = store;
        this.verdicts = verdicts;
        this.recorder = recorder;
        this.handler = handler;
        this.messages = messages;
        this.requests = requests;
        long claimToken = 0L;
        int r = 0;
        for (ClaimRequest request : requests) {
            if (request != null) {
                ClaimResult result = results.get(r++);
                // A key repeated in the poll gets the same result for each occurrence: one state.
                keys.putIfAbsent(request.messageId(), new KeyState(result));
                if (result.outcome() == ClaimOutcome.CLAIMED) {
                    claimToken = result.message().claimToken();
                }
            }
        }
        this.token = claimToken;
        // Renewed until the poll ends (releaseUnrun), each claim until it is completed or released.
        this.renewal = renewer.start(handler, token, inStatus(Status.HELD));
    }

    // The scopes are guards: try-with-resources closes them; the body never names them.
    @SuppressWarnings("try")
    @Override
    public <T> HandlerResult<T> execute(int index, HandlerBody<T> body) throws Exception {
        ClaimRequest request = requests.get(index);
        KeyState state = request == null ? null : keys.get(request.messageId());
        if (request == null || state == null || state.status == Status.RELEASED) {
            if (state != null && state.busyAtClaim) {
                awaitOtherHolder(request.messageId());
                try {
                    return executor.execute(handler, messages.get(index), body);
                } catch (MessageBusyException busy) {
                    // The error handler seeks the rest of the poll back and waits its busy-retry
                    // interval before the next poll: the claims of the records after this one would
                    // be held for nothing meanwhile, making other consumers' copies of them BUSY
                    // in turn. Given back now, unrun, as the next poll would.
                    releaseUnrunNow();
                    throw busy;
                }
            }
            // Observed by the executor.
            return executor.execute(handler, messages.get(index), body);
        }
        // Observed as the executor observes a record; the handler runs in the observation's scope.
        MessageHandlingObservation observation =
                MessageHandlingObservation.start(executor.observations(), handler.consumer(), IdempotencyMode.LEASE);
        try (Observation.Scope scope = observation.openScope()) {
            return executeClaimed(request, state, body, observation);
        }
    }

    @Override
    public <T> HandlerResult<T> execute(int index, InboundMessage dispatched, HandlerBody<T> body) throws Exception {
        ClaimRequest request = requests.get(index);
        String key;
        try {
            key = executor.keyResolver().resolve(handler, dispatched);
        } catch (RuntimeException ex) {
            key = null; // refused on the ordinary path, with its own message
        }
        if (request == null || !request.messageId().equals(key)) {
            // An interceptor changed the record's key after the poll was claimed (or gave it one):
            // it runs under the key it is dispatched with, as without the poll claim. The claim of
            // its old key, if any, stays HELD and is released with the unrun ones.
            return executor.execute(handler, dispatched, body);
        }
        return execute(index, body);
    }

    /** A record whose key this poll claimed (or completed): every way out reports its outcome once, to both. */
    // The scope is a guard: try-with-resources closes it; the body never names it.
    @SuppressWarnings("try")
    private <T> HandlerResult<T> executeClaimed(
            ClaimRequest request, KeyState state, HandlerBody<T> body, MessageHandlingObservation observation)
            throws Exception {
        String consumer = handler.consumer();
        ProcessedMessage row = state.result.message();
        if (state.status == Status.PENDING || state.status == Status.DONE) {
            // Completed before the poll, or ran earlier in this poll (its completion is written
            // before any offset commit).
            return duplicate(request, row, observation);
        }
        HandlerRun run = recorder.handlerRun(consumer);
        T value;
        try {
            try {
                verdicts.checkFingerprint(handler, request, row);
            } catch (FingerprintMismatchException ex) {
                release(request, state);
                // Rejected before the handler ran: no attempt counted.
                verdicts.releaseUnrunQuietly(row, ex);
                throw ex;
            }
            if (ClaimVerdicts.isUncertain(verdicts.reconcileWindow(handler), handler.lease(), row)) {
                release(request, state); // marked RECONCILE (or left to whoever holds it now)
                throw verdicts.markUncertain(handler, row);
            }
            try (CurrentIdempotencyContext.Scope scope = CurrentIdempotencyContext.open(
                    new IdempotencyContext(request.messageId(), consumer, row.attempts(), IdempotencyMode.LEASE))) {
                value = run.run(body);
            } catch (Exception | Error ex) {
                // Released at once so the error handler's redelivery can claim it again.
                release(request, state);
                verdicts.releaseQuietly(row, ex);
                if (ex instanceof NotDoneSignal notDone) {
                    // A nack: released as a failure, returned (the container seeks it back itself).
                    report(observation, Outcome.NOT_DONE, null);
                    return notDone(notDone);
                }
                throw ex;
            }
        } catch (Exception | Error ex) {
            report(observation, Outcome.of(ex, run.started()), ex);
            throw ex;
        }
        state.status = Status.PENDING;
        report(observation, Outcome.PROCESSED, null);
        return new HandlerResult<>(MessageOutcome.PROCESSED, value);
    }

    /**
     * A key another consumer held at the poll's claim (most often that consumer's own poll claim,
     * completed when its poll ends): first writes this poll's kept completions, so that a consumer
     * waiting for one of them goes on (two polls that each hold a key the other has met would
     * otherwise wait for each other's end), then reads the key's row until it is no longer in
     * progress, for at most {@link #BUSY_WAIT_MILLIS}. The ordinary path decides after it, as
     * without the poll claim: DUPLICATE if the holder completed it, a claim if it released it or
     * its lease ended, BUSY if it still holds it. Nothing here fails the record: a ledger error ends
     * the wait (the kept completions stay kept and are written before the next commit).
     */
    private void awaitOtherHolder(String messageId) {
        try {
            completePending();
            long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(BUSY_WAIT_MILLIS);
            long pause = FIRST_BUSY_WAIT_MILLIS;
            while (store.find(handler.consumer(), messageId)
                    .filter(row -> row.status() == MessageStatus.IN_PROGRESS)
                    .isPresent()) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return;
                }
                TimeUnit.NANOSECONDS.sleep(Math.min(left, TimeUnit.MILLISECONDS.toNanos(pause)));
                pause *= 2;
            }
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException ex) {
            log.debug("Consumer '{}' stopped waiting for the holder of {}", handler.consumer(), messageId, ex);
        }
    }

    // A NotDoneSignal carries the value of the body it came from, of type T.
    @SuppressWarnings("unchecked")
    private static <T> HandlerResult<T> notDone(NotDoneSignal notDone) {
        return new HandlerResult<>(MessageOutcome.NOT_DONE, (T) notDone.value());
    }

    /** The claim is given up: no longer renewed (no renewal lands after its release), then released by the caller. */
    private void release(ClaimRequest request, KeyState state) {
        state.status = Status.RELEASED;
        renewal.forget(List.of(request.messageId()));
    }

    private <T> HandlerResult<T> duplicate(
            ClaimRequest request, ProcessedMessage row, MessageHandlingObservation observation) {
        try {
            verdicts.checkFingerprint(handler, request, row);
        } catch (FingerprintMismatchException ex) {
            report(observation, Outcome.REJECTED, ex);
            throw ex;
        }
        recorder.skippedDuplicate(handler.consumer(), request.messageId(), row.processedAt());
        report(observation, Outcome.DUPLICATE, null);
        return HandlerResult.duplicate();
    }

    /** A record's outcome: counted in {@code sumi.messages} and ends its observation. */
    private void report(MessageHandlingObservation observation, Outcome outcome, @Nullable Throwable failure) {
        recorder.message(handler.consumer(), outcome);
        observation.stop(outcome, failure);
    }

    @Override
    public int completePending() {
        List<String> pending = inStatus(Status.PENDING);
        if (pending.isEmpty()) {
            return 0;
        }
        int completed;
        // Not renewed while completed: a renewal would miss the completed rows and count them lost.
        renewal.forget(pending);
        try {
            completed = store.completeAll(handler.consumer(), token, pending);
        } catch (RuntimeException first) {
            // Once more: the handler ran, a completion saves running it again.
            try {
                completed = store.completeAll(handler.consumer(), token, pending);
            } catch (RuntimeException second) {
                first.addSuppressed(second);
                // Still kept and still ours: renewed until the next try.
                renewal.renewAgain(pending);
                throw first;
            }
        }
        pending.forEach(key -> Objects.requireNonNull(keys.get(key), key).status = Status.DONE);
        if (completed < pending.size()) {
            // Leases taken over while the poll ran: the taker holds a delivery of the same key,
            // which its container does not ack before the key is done.
            recorder.leaseLost(handler.consumer(), pending.size() - completed);
            log.warn(
                    "Consumer '{}' lost the lease of {} message(s) of a poll to another consumer before their completion"
                            + " (e.g. {}); the handler ran more than once for them: the lease ran out (lease renewal off,"
                            + " the poll ran past the handler's max run time, or renewals did not reach the ledger)",
                    handler.consumer(),
                    pending.size() - completed,
                    pending.get(0));
        }
        return completed;
    }

    /** Gives back the claims not run yet before the poll ends (a BUSY record stopped it); renewal goes on for the kept completions. */
    private void releaseUnrunNow() {
        List<String> held = inStatus(Status.HELD);
        if (held.isEmpty()) {
            return;
        }
        renewal.forget(held);
        giveBack(held);
    }

    @Override
    public void releaseUnrun() {
        // The end of the poll: renewal stops (waiting for a statement in flight) before anything is released.
        renewal.close();
        List<String> held = inStatus(Status.HELD);
        if (held.isEmpty()) {
            return;
        }
        giveBack(held);
    }

    private void giveBack(List<String> held) {
        held.forEach(key -> Objects.requireNonNull(keys.get(key), key).status = Status.RELEASED);
        // The container did not deliver these records from this poll (an earlier record failed or was
        // busy and the error handler sought back, a filter, a pause, a rebalance, a stop): their handler
        // never started, so the claims are given back without counting an attempt. A poll blocked behind
        // a busy or failing record re-claims the records after it with every retry; counted, each
        // re-claim was a take-over, and once the block outlasted reconcile-after the records were held
        // for reconciliation without ever having run (issue 19, A1).
        for (int attempt = 1; ; attempt++) {
            try {
                store.releaseUnrun(handler.consumer(), token, held);
                return;
            } catch (RuntimeException ex) {
                if (attempt == 2) {
                    log.warn(
                            "Consumer '{}' could not release {} claim(s) of a poll that were not run (e.g. {}); they are"
                                    + " BUSY until their lease of {} ends",
                            handler.consumer(),
                            held.size(),
                            held.get(0),
                            handler.lease(),
                            ex);
                    return;
                }
            }
        }
    }

    @Override
    public void abandon() {
        // Renewal stops before anything else, so no renewal lands after this returns: the claims
        // lapse one lease after the last renewal at most.
        renewal.close();
        List<String> open = inStatus(Status.HELD);
        open.addAll(inStatus(Status.PENDING));
        open.forEach(key -> Objects.requireNonNull(keys.get(key), key).status = Status.RELEASED);
        if (!open.isEmpty()) {
            log.warn(
                    "Consumer '{}' abandoned {} claim(s) of a poll without writing their completions or releasing"
                            + " them (e.g. {}): the ledger could not be reached while the consumer shut down. Their"
                            + " offsets were not committed; they are delivered again and taken over once their lease of"
                            + " {} ends",
                    handler.consumer(),
                    open.size(),
                    open.get(0),
                    handler.lease());
        }
    }

    private List<String> inStatus(Status status) {
        List<String> found = new ArrayList<>();
        keys.forEach((key, state) -> {
            if (state.status == status) {
                found.add(key);
            }
        });
        return found;
    }
}
