package io.sumi.consumer;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import io.sumi.consumer.IdempotentExecutor.BatchBody;
import io.sumi.consumer.IdempotentExecutor.HandlerBody;
import io.sumi.consumer.OutcomeRecorder.HandlerRun;
import io.sumi.consumer.OutcomeRecorder.Outcome;
import io.sumi.consumer.exception.BatchFailedException;
import io.sumi.consumer.exception.IdempotencyException;
import io.sumi.consumer.exception.InvalidIdempotencyKeyException;
import io.sumi.consumer.exception.LedgerUnavailableException;
import io.sumi.store.ClaimRequest;
import io.sumi.store.ClaimResult;
import io.sumi.store.ProcessedMessageStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;

/**
 * The executor (see {@link IdempotentExecutor}): checks each key, chooses the mode, hands the call
 * to {@link LeaseExecution} or {@link TransactionalExecution}, and reports how it ended to the
 * {@link OutcomeRecorder}.
 *
 * <p>Design notes.
 * <ul>
 *   <li>Concurrency: the executor holds no per-message state; every race between two deliveries
 *   of one key is decided by the ledger's one-statement claim (see each mode's notes). Per call it
 *   allocates one {@link HandlerRun}, which only the calling thread touches.</li>
 *   <li>Lease renewal: one {@link LeaseRenewer} per executor, whose few daemon threads renew the
 *   claims of every running lease-mode handler; {@link #close} stops them.</li>
 *   <li>Mode: {@code AUTO} means transactional exactly when a transaction that the ledger's
 *   DataSource takes part in is active ({@link TransactionSupport#isTransactionActive()}, the
 *   participation rule); a transaction of another resource means lease mode.</li>
 *   <li>Keys are checked here, once, for every mode, records and batches alike, before the ledger
 *   is touched: a batch stops at its first unusable key and only the messages before it are
 *   claimed.</li>
 *   <li>Batches are planned by {@link BatchPlan#of}, a pure function of the claim results.</li>
 *   <li>Counting: a record's outcome is read here, once, from how the call ended
 *   ({@link Outcome#of}: its result, or its exception and whether the handler had run), so a new
 *   path in a mode cannot forget or repeat a count; who counts what of a batch is listed on
 *   {@link OutcomeRecorder}.</li>
 * </ul>
 */
final class DefaultIdempotentExecutor implements IdempotentExecutor {

    private final ProcessedMessageStore store;
    private final TransactionSupport transactions;
    private final OutcomeRecorder recorder;
    private final MessageKeyResolver keyResolver;
    private final LeaseExecution lease;
    private final TransactionalExecution transactional;
    private final LeaseRenewer renewer;
    private final ObservationRegistry observations;
    private final ClaimVerdicts verdicts;

    /**
     * The executor {@link IdempotentExecutor.Builder#build()} makes (the only constructor: the
     * builder holds every default).
     *
     * @param reconcileAfter the default reconcile-after window of handlers that set none; {@code null}
     *     or zero: uncertain outcomes are not detected unless a handler sets a window
     * @param renewLeases whether lease-mode claims are renewed while their handler runs
     * @param maxRun the max run time of lease-mode handlers that set none (positive)
     * @param observations where each handled message (or batch) is observed, as
     *     {@value MessageHandlingObservation#NAME}; {@link ObservationRegistry#NOOP} for none
     * @param ticker the monotonic clock lease renewal reads (how late a renewal landed, how long a
     *     handler has run): {@code System::nanoTime}, or one a test moves by hand
     */
    DefaultIdempotentExecutor(
            ProcessedMessageStore store,
            TransactionSupport transactions,
            MeterRegistry meterRegistry,
            MessageKeyResolver keyResolver,
            @Nullable Duration reconcileAfter,
            boolean renewLeases,
            Duration maxRun,
            ObservationRegistry observations,
            LongSupplier ticker) {
        if (maxRun.isNegative() || maxRun.isZero()) {
            throw new IllegalArgumentException("maxRun must be positive, was " + maxRun);
        }
        this.observations = Objects.requireNonNull(observations, "observations");
        this.transactions = transactions;
        this.recorder = new OutcomeRecorder(meterRegistry);
        // The message paths see an unreachable ledger as LedgerUnavailableException (held in place by
        // the binders); renewal keeps the store's own failures, which it retries at its next tick.
        this.store = new GuardedLedger(store, recorder);
        this.keyResolver = keyResolver;
        this.verdicts = new ClaimVerdicts(this.store, recorder, reconcileAfter);
        this.renewer = new LeaseRenewer(store, recorder, renewLeases, maxRun, Objects.requireNonNull(ticker, "ticker"));
        this.lease = new LeaseExecution(this.store, verdicts, recorder, renewer);
        this.transactional = new TransactionalExecution(this.store, transactions, verdicts, recorder);
    }

    /** Where handled messages are observed; the poll claim observes its records there too. */
    ObservationRegistry observations() {
        return observations;
    }

    @Override
    public MessageKeyResolver keyResolver() {
        return keyResolver;
    }

    /** Stops the lease-renewal threads: running handlers keep their leases only until these run out. */
    @Override
    public void close() {
        renewer.close();
    }

    @Override
    // The observation's scope is opened for the handler (spans it creates are its children), never
    // read; a NotDoneSignal carries the value of the body it came from, of type T.
    @SuppressWarnings({"try", "unchecked"})
    public <T> HandlerResult<T> execute(HandlerDefinition handler, InboundMessage message, HandlerBody<T> body)
            throws Exception {
        String consumer = handler.consumer();
        IdempotencyMode mode = mode(handler);
        MessageHandlingObservation observation = MessageHandlingObservation.start(observations, consumer, mode);
        HandlerRun run = recorder.handlerRun(consumer);
        HandlerResult<T> result;
        try (Observation.Scope scope = observation.openScope()) {
            ClaimRequest request = new ClaimRequest(key(handler, message), message.fingerprint());
            result = mode == IdempotencyMode.TRANSACTIONAL
                    ? transactional.execute(handler, request, body, run)
                    : lease.execute(handler, request, body, run);
        } catch (NotDoneSignal notDone) {
            // The handler said not done (a nack): the modes released its claim or rolled its
            // transaction back, as for a failure; the container settles the nack itself.
            recorder.message(consumer, Outcome.NOT_DONE);
            observation.stop(Outcome.NOT_DONE, null);
            return new HandlerResult<>(MessageOutcome.NOT_DONE, (T) notDone.value());
        } catch (Exception | Error ex) {
            Outcome outcome = Outcome.of(ex, run.started());
            recorder.message(consumer, outcome);
            observation.stop(outcome, ex);
            throw ex;
        }
        Outcome outcome = result.outcome() == MessageOutcome.PROCESSED ? Outcome.PROCESSED : Outcome.DUPLICATE;
        recorder.message(consumer, outcome);
        observation.stop(outcome, null);
        return result;
    }

    /**
     * Lease mode follows the handler's future without blocking ({@link LeaseExecution#executeAsync});
     * transactional mode waits for it inside the transaction (the transaction is bound to the
     * calling thread: it commits only once the future has succeeded, and rolls back when it fails).
     * The message is counted and its observation stopped when the returned future completes.
     */
    @Override
    // The observation's scope is opened for the handler (spans it creates are its children), never read.
    @SuppressWarnings("try")
    public <T> CompletableFuture<HandlerResult<T>> executeAsync(
            HandlerDefinition handler, InboundMessage message, HandlerBody<CompletionStage<T>> body) throws Exception {
        IdempotencyMode mode = mode(handler);
        if (mode == IdempotencyMode.TRANSACTIONAL) {
            return IdempotentExecutor.super.executeAsync(handler, message, body);
        }
        String consumer = handler.consumer();
        MessageHandlingObservation observation = MessageHandlingObservation.start(observations, consumer, mode);
        HandlerRun run = recorder.handlerRun(consumer);
        CompletableFuture<HandlerResult<T>> result;
        try (Observation.Scope scope = observation.openScope()) {
            ClaimRequest request = new ClaimRequest(key(handler, message), message.fingerprint());
            result = lease.executeAsync(handler, request, body, run);
        } catch (Exception | Error ex) {
            Outcome outcome = Outcome.of(ex, run.started());
            recorder.message(consumer, outcome);
            observation.stop(outcome, ex);
            throw ex;
        }
        return result.whenComplete((value, failure) -> {
            Outcome outcome = failure != null
                    ? Outcome.of(failure, true)
                    : value.outcome() == MessageOutcome.PROCESSED ? Outcome.PROCESSED : Outcome.DUPLICATE;
            recorder.message(consumer, outcome);
            observation.stop(outcome, failure);
        });
    }

    @Override
    // The observation's scope is opened for the handler (spans it creates are its children), never read.
    @SuppressWarnings("try")
    public BatchResult executeBatch(HandlerDefinition handler, List<? extends InboundMessage> messages, BatchBody body)
            throws Exception {
        String consumer = handler.consumer();
        if (handler.storeReply()) {
            throw new IllegalArgumentException(
                    "The handler of consumer '" + consumer
                            + "' keeps its replies (storeReply), which only record listeners can: a batch listener has no reply per message");
        }
        List<ClaimRequest> requests = new ArrayList<>(messages.size());
        IdempotencyException keyStop = null;
        for (InboundMessage message : messages) {
            try {
                requests.add(new ClaimRequest(key(handler, message), message.fingerprint()));
            } catch (IdempotencyException ex) {
                recorder.message(consumer, Outcome.REJECTED);
                keyStop = ex;
                break;
            }
        }
        IdempotencyMode mode = mode(handler);
        MessageHandlingObservation observation = MessageHandlingObservation.start(observations, consumer, mode);
        HandlerRun run = recorder.handlerRun(consumer);
        BatchRun result;
        try (Observation.Scope scope = observation.openScope()) {
            result = mode == IdempotencyMode.TRANSACTIONAL
                    ? transactional.executeBatch(handler, requests, keyStop, body, run)
                    : lease.executeBatch(handler, requests, keyStop, body, run);
        } catch (LedgerUnavailableException ex) {
            // Sumi's own ledger call failed (the claim, or a completion and its release): nothing of
            // this call is done that a redelivery would not see as a duplicate, so the batch stops at
            // its first message, as for a busy key there. A binder then holds it in place (Kafka:
            // the record path of the error handler, retried without limit) instead of spending the
            // broker's redelivery budget, and without Spring Kafka's in-memory batch retries.
            Outcome outcome = Outcome.of(ex, run.started());
            recorder.message(consumer, outcome);
            observation.stop(outcome, ex);
            throw new BatchFailedException(0, ex);
        } catch (Exception | Error ex) {
            if (!run.threwFromBatchHandler(ex)) {
                // A ledger or transaction failure; a failed handler run is counted where it ran.
                recorder.message(consumer, Outcome.FAILED);
            }
            observation.stop(Outcome.of(ex, run.started()), ex);
            throw ex;
        }
        recorder.batch(consumer, result.processed(), result.duplicates());
        // A batch is observed once: processed if its handler ran for any message, else duplicate;
        // a message that stopped it makes it failed (or what the message was refused for).
        Throwable stopped = result.reported() != null ? result.reported() : result.cause();
        boolean notDone = stopped instanceof NotDoneSignal;
        observation.stop(
                stopped != null
                        ? Outcome.of(stopped, run.started())
                        : result.processed() > 0 ? Outcome.PROCESSED : Outcome.DUPLICATE,
                notDone ? null : stopped);
        if (result.reported() != null) {
            throw result.reported();
        }
        if (notDone) {
            // The handler nacked from stop on: the messages before it are done, the rest released
            // or rolled back; the container settles the nack itself.
            return new BatchResult(result.processed(), result.duplicates(), result.stop());
        }
        if (result.stop() < messages.size()) {
            throw new BatchFailedException(result.stop(), Objects.requireNonNull(result.cause()));
        }
        return new BatchResult(result.processed(), result.duplicates());
    }

    @Override
    public @Nullable PollClaim claimPoll(HandlerDefinition handler, List<? extends InboundMessage> messages) {
        // A handler that keeps replies writes each reply with its completion: never a deferred one.
        if (messages.isEmpty() || handler.storeReply() || mode(handler) != IdempotencyMode.LEASE) {
            return null;
        }
        List<@Nullable ClaimRequest> requests = new ArrayList<>(messages.size());
        List<ClaimRequest> usable = new ArrayList<>(messages.size());
        for (InboundMessage message : messages) {
            ClaimRequest request;
            try {
                request = new ClaimRequest(key(handler, message), message.fingerprint());
            } catch (RuntimeException ex) {
                // Not claimed: the record's own dispatch takes the ordinary path and is refused there.
                request = null;
            }
            requests.add(request);
            if (request != null) {
                usable.add(request);
            }
        }
        List<ClaimResult> results =
                usable.isEmpty() ? List.of() : store.claimAll(handler.consumer(), usable, handler.lease());
        return new LeasePollClaim(this, store, verdicts, recorder, handler, messages, requests, results, renewer);
    }

    /** The participation rule: {@code AUTO} is transactional only inside a transaction of the ledger's DataSource. */
    private IdempotencyMode mode(HandlerDefinition handler) {
        if (handler.mode() != IdempotencyMode.AUTO) {
            return handler.mode();
        }
        return transactions.isTransactionActive() ? IdempotencyMode.TRANSACTIONAL : IdempotencyMode.LEASE;
    }

    /**
     * The message's key, checked once for every mode and path before the ledger is touched: keys
     * are stored as they are (never truncated or re-encoded), so a key the ledger cannot store
     * exactly is rejected, not retried.
     */
    private String key(HandlerDefinition handler, InboundMessage message) {
        String key = keyResolver.resolve(handler, message);
        if (key.isEmpty()) {
            throw new InvalidIdempotencyKeyException("The idempotency key of a message of consumer '"
                    + handler.consumer() + "' is empty; a key must identify the message");
        }
        for (int i = 0; i < key.length(); i++) {
            char c = key.charAt(i);
            String problem = null;
            if (c == '\u0000') {
                // PostgreSQL cannot store NUL in text; other ledgers would then disagree with it.
                problem = "a NUL character (U+0000), which no ledger can store";
            } else if (Character.isHighSurrogate(c)
                    && i + 1 < key.length()
                    && Character.isLowSurrogate(key.charAt(i + 1))) {
                i++;
            } else if (Character.isSurrogate(c)) {
                problem = "an unpaired surrogate (U+" + Integer.toHexString(c).toUpperCase(Locale.ROOT)
                        + "), which has no UTF-8 form";
            }
            if (problem != null) {
                throw new InvalidIdempotencyKeyException(
                        "The idempotency key of a message of consumer '" + handler.consumer()
                                + "' contains " + problem + " at index " + i
                                + "; it is rejected, not altered, so that two keys never"
                                + " collide. Send keys as plain text (e.g. hex or Base64 of a binary id)");
            }
        }
        if (key.length() > store.maxKeyLength()) {
            throw new InvalidIdempotencyKeyException(
                    "The idempotency key of a message of consumer '" + handler.consumer() + "' is "
                            + key.length() + " characters long; the ledger takes at most " + store.maxKeyLength()
                            + " (keys are rejected, not truncated, so that two long keys never collide). Shorten the key at the"
                            + " producer, or derive a shorter one with @IdempotentHandler(key = \"...\") (e.g. a hash of it). Key starts with: "
                            + key.substring(0, Math.min(40, key.length())));
        }
        return key;
    }
}
