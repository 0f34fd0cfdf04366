package io.sumi.consumer;

import io.sumi.consumer.IdempotentExecutor.BatchBody;
import io.sumi.consumer.IdempotentExecutor.HandlerBody;
import io.sumi.consumer.OutcomeRecorder.HandlerRun;
import io.sumi.consumer.exception.BatchFailedException;
import io.sumi.consumer.exception.IdempotencyException;
import io.sumi.store.ClaimOutcome;
import io.sumi.store.ClaimRequest;
import io.sumi.store.ClaimResult;
import io.sumi.store.ProcessedMessageStore;
import io.sumi.store.StoredReply;
import java.time.Duration;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * Transactional mode: in one transaction that the ledger's DataSource takes part in, insert the
 * ledger row {@code COMPLETED} and run the handler; the row and the handler's own rows commit or
 * roll back together, so there is nothing to complete or release afterwards.
 *
 * <p>Concurrency: a second delivery of a key waits on the row's primary key until the first
 * transaction ends, then finds it {@code DUPLICATE} (commit) or claims it (rollback). A row held by
 * a lease-mode claim elsewhere is {@code BUSY}.
 *
 * <p>Batches run in passes. A pass claims a prefix of the batch and runs the handler in one
 * transaction. When a message stops the pass at index <i>k</i> (found while planning, or reported by
 * the handler with a {@link BatchFailedException}), the pass rolls back, its claims included, and
 * the next pass runs just the messages before <i>k</i>: the effects are rows, so running them again
 * in a fresh transaction is correct, and it is the only way to commit "the ones before". Each pass
 * runs a strictly shorter prefix, so the passes end. Both kinds of stop leave the transaction as a
 * {@code BatchFailedException}, since an exception is what rolls a {@link TransactionSupport}
 * transaction back.
 *
 * <p>"Joined": inside a transaction of the caller's that the ledger's DataSource takes part in,
 * passes cannot work: a stopped pass only marks the caller's transaction rollback-only (its rows
 * stay, and a second pass would see them as duplicates), and nothing of the batch can commit any
 * more. Then no message is done, and the batch stops at index 0 with the stopping message's cause.
 * With only a transaction of another resource active (the container's Kafka transaction), every
 * pass runs in a JDBC transaction of its own, and the messages before the stop do commit.
 */
final class TransactionalExecution {

    private final ProcessedMessageStore store;
    private final TransactionSupport transactions;
    private final ClaimVerdicts verdicts;
    private final OutcomeRecorder recorder;

    TransactionalExecution(
            ProcessedMessageStore store,
            TransactionSupport transactions,
            ClaimVerdicts verdicts,
            OutcomeRecorder recorder) {
        this.store = store;
        this.transactions = transactions;
        this.verdicts = verdicts;
        this.recorder = recorder;
    }

    // ---------------------------------------------------------------- one message

    // The scope is a guard: try-with-resources closes it; the body never names it.
    @SuppressWarnings("try")
    <T> HandlerResult<T> execute(HandlerDefinition handler, ClaimRequest request, HandlerBody<T> body, HandlerRun run)
            throws Exception {
        return transactions.inTransaction(() -> {
            ClaimResult claim = store.claimCompleted(handler.consumer(), request);
            if (claim.outcome() != ClaimOutcome.CLAIMED) {
                return verdicts.notClaimed(handler, request, claim);
            }
            verdicts.checkFingerprint(handler, request, claim.message());
            try (CurrentIdempotencyContext.Scope scope = CurrentIdempotencyContext.open(new IdempotencyContext(
                    request.messageId(),
                    handler.consumer(),
                    claim.message().attempts(),
                    IdempotencyMode.TRANSACTIONAL))) {
                T value = run.run(body);
                // In the handler's transaction: the reply commits with the row, or neither does (a
                // reply too large to keep rolls both back).
                StoredReply reply = verdicts.replies().toKeep(handler, request.messageId(), value);
                if (reply != null && !store.storeReply(claim.message(), reply)) {
                    throw new IllegalStateException("The ledger row of message '" + request.messageId()
                            + "' of consumer '" + handler.consumer()
                            + "' that this transaction wrote was not found to keep its reply");
                }
                verdicts.replies().kept(handler, reply);
                return new HandlerResult<>(MessageOutcome.PROCESSED, value);
            }
        });
    }

    // ---------------------------------------------------------------- batches

    /** One pass: committed ({@code cause == null}, all of its prefix done) or stopped at {@code stop}. */
    private record Pass(
            int processed,
            int duplicates,
            int stop,
            @Nullable Throwable cause) {}

    /**
     * Runs a batch whose {@code requests} all have usable keys; {@code keyStop} is why the batch
     * ends after them (a message without a usable key), if it does.
     */
    BatchRun executeBatch(
            HandlerDefinition handler,
            List<ClaimRequest> requests,
            @Nullable IdempotencyException keyStop,
            BatchBody body,
            HandlerRun run)
            throws Exception {
        boolean joined = transactions.isTransactionActive();
        int limit = requests.size();
        Throwable cause = keyStop;
        while (limit > 0) {
            Pass pass = pass(handler, requests.subList(0, limit), body, run);
            if (pass.cause() == null) {
                return new BatchRun(pass.processed(), pass.duplicates(), limit, cause, null);
            }
            if (joined) {
                return BatchRun.stoppedAt(0, pass.cause());
            }
            limit = pass.stop();
            cause = pass.cause();
        }
        return BatchRun.stoppedAt(0, cause);
    }

    private Pass pass(HandlerDefinition handler, List<ClaimRequest> prefix, BatchBody body, HandlerRun run)
            throws Exception {
        String consumer = handler.consumer();
        Duration window = verdicts.reconcileWindow(handler);
        try {
            BatchPlan plan = transactions.inTransaction(() -> {
                List<ClaimResult> results = store.claimAllCompleted(consumer, prefix);
                BatchPlan planned = BatchPlan.of(
                        prefix,
                        results,
                        handler.fingerprintPolicy(),
                        row -> ClaimVerdicts.isUncertain(window, handler.lease(), row));
                IdempotencyException refusal = verdicts.stopOf(handler, prefix, results, planned);
                if (refusal != null) {
                    recorder.refused(consumer, refusal);
                    throw new BatchFailedException(planned.stop(), refusal); // rolls the pass back
                }
                if (!planned.run().isEmpty()) {
                    run.run(body, planned.run());
                }
                recorder.skippedDuplicates(consumer, prefix, results, planned);
                return planned;
            });
            return new Pass(plan.run().size(), plan.duplicates(), prefix.size(), null);
        } catch (BatchFailedException stopped) {
            if (run.threwFromBatchHandler(stopped) && (stopped.index() <= 0 || stopped.index() >= prefix.size())) {
                // The handler reported the first message (nothing before it is done) or one this pass
                // did not run: its report goes on as it is.
                throw stopped;
            }
            return new Pass(0, 0, stopped.index(), stopped.getCause() != null ? stopped.getCause() : stopped);
        } catch (NotDoneSignal notDone) {
            // The handler nacked from an index: the pass rolled back (the exception did it), and
            // the next pass runs the messages before it. Always a strictly shorter prefix.
            return new Pass(0, 0, Math.min(notDone.index(), prefix.size() - 1), notDone);
        }
    }
}
