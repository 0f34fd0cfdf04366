package io.sumi.consumer.internal;

import io.micrometer.core.instrument.MeterRegistry;
import io.sumi.consumer.BatchFailedException;
import io.sumi.consumer.BatchResult;
import io.sumi.consumer.FingerprintMismatchException;
import io.sumi.consumer.FingerprintMismatchPolicy;
import io.sumi.consumer.HandlerDefinition;
import io.sumi.consumer.HandlerResult;
import io.sumi.consumer.IdempotencyContext;
import io.sumi.consumer.IdempotencyException;
import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentExecutor;
import io.sumi.consumer.InboundMessage;
import io.sumi.consumer.InvalidIdempotencyKeyException;
import io.sumi.consumer.MessageBusyException;
import io.sumi.consumer.MessageKeyResolver;
import io.sumi.consumer.MessageOutcome;
import io.sumi.consumer.ReconciliationRequiredException;
import io.sumi.consumer.TransactionSupport;
import io.sumi.consumer.internal.ConsumerMetrics.Outcome;
import io.sumi.store.ClaimOutcome;
import io.sumi.store.ClaimRequest;
import io.sumi.store.ClaimResult;
import io.sumi.store.MessageStatus;
import io.sumi.store.ProcessedMessage;
import io.sumi.store.ProcessedMessageStore;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The executor's state machine (see {@link IdempotentExecutor}).
 *
 * <p>Concurrency: the executor holds no per-message state; every race between two deliveries of
 * one key is decided by the ledger's one-statement claim. Two threads that claim one key at the
 * same moment get {@code CLAIMED} and {@code BUSY} (lease mode), or the second waits on the
 * primary key until the first transaction ends and then gets {@code DUPLICATE} (commit) or
 * {@code CLAIMED} (rollback) (transactional mode).
 *
 * <p>Uncertain outcomes: a lease-mode claim that takes a message over (attempt 2 or later) whose
 * first claim is older than the handler's reconcile-after window is not run: the row is marked
 * {@code RECONCILE} and {@link ReconciliationRequiredException} is thrown. Age is measured on the
 * ledger's clock (the claim's {@code leaseUntil - lease} is the ledger's "now"), so an executor and
 * a store with different clocks cannot disagree about it.
 */
public final class DefaultIdempotentExecutor implements IdempotentExecutor {

    private static final Logger log = LoggerFactory.getLogger(DefaultIdempotentExecutor.class);

    private final ProcessedMessageStore store;
    private final TransactionSupport transactions;
    private final ConsumerMetrics metrics;
    private final MessageKeyResolver keyResolver;
    private final @Nullable Duration reconcileAfter;

    public DefaultIdempotentExecutor(ProcessedMessageStore store, TransactionSupport transactions, MeterRegistry meterRegistry,
            MessageKeyResolver keyResolver) {
        this(store, transactions, meterRegistry, keyResolver, null);
    }

    /**
     * @param reconcileAfter the default reconcile-after window of handlers that set none; {@code null}
     *     or zero: uncertain outcomes are not detected unless a handler sets a window
     */
    public DefaultIdempotentExecutor(ProcessedMessageStore store, TransactionSupport transactions, MeterRegistry meterRegistry,
            MessageKeyResolver keyResolver, @Nullable Duration reconcileAfter) {
        this.store = store;
        this.transactions = transactions;
        this.metrics = new ConsumerMetrics(meterRegistry);
        this.keyResolver = keyResolver;
        this.reconcileAfter = reconcileAfter;
    }

    @Override
    public MessageKeyResolver keyResolver() {
        return keyResolver;
    }

    // ---------------------------------------------------------------- one message

    @Override
    public <T> HandlerResult<T> execute(HandlerDefinition handler, InboundMessage message, HandlerBody<T> body) throws Exception {
        ClaimRequest request;
        try {
            request = new ClaimRequest(key(handler, message), message.fingerprint());
        }
        catch (IdempotencyException ex) {
            metrics.count(handler.consumer(), Outcome.REJECTED);
            throw ex;
        }
        if (mode(handler) == IdempotencyMode.TRANSACTIONAL) {
            return executeTransactional(handler, request, body);
        }
        return executeLease(handler, request, body);
    }

    private <T> HandlerResult<T> executeLease(HandlerDefinition handler, ClaimRequest request, HandlerBody<T> body) throws Exception {
        String consumer = handler.consumer();
        ClaimResult claim = store.claim(consumer, request, handler.lease());
        if (claim.outcome() != ClaimOutcome.CLAIMED) {
            try {
                return notClaimed(handler, request, claim);
            }
            catch (FingerprintMismatchException ex) {
                metrics.count(consumer, Outcome.REJECTED);
                throw ex;
            }
        }
        ProcessedMessage row = claim.message();
        try {
            checkFingerprint(handler, request, row);
        }
        catch (FingerprintMismatchException ex) {
            releaseQuietly(row, ex);
            metrics.count(consumer, Outcome.REJECTED);
            throw ex;
        }
        IdempotencyException uncertain = reconcileIfUncertain(handler, row);
        if (uncertain != null) {
            throw uncertain;
        }
        T value;
        long start = System.nanoTime();
        try (IdempotencyContext.Scope scope = new IdempotencyContext(request.messageId(), consumer, row.attempts(),
                IdempotencyMode.LEASE).open()) {
            value = body.run();
        }
        catch (Exception | Error ex) {
            metrics.handlerDuration(consumer, false, System.nanoTime() - start);
            metrics.count(consumer, Outcome.FAILED);
            // Release so the redelivery can claim at once; the exception itself goes on unchanged.
            releaseQuietly(row, ex);
            throw ex;
        }
        metrics.handlerDuration(consumer, true, System.nanoTime() - start);
        // If completing fails, the exception propagates: the message is redelivered and, once the
        // lease has expired, run again with the same key (which the provider deduplicates).
        if (!store.complete(row)) {
            leaseLost(consumer, List.of(request.messageId()));
        }
        metrics.count(consumer, Outcome.PROCESSED);
        return new HandlerResult<>(MessageOutcome.PROCESSED, value);
    }

    private <T> HandlerResult<T> executeTransactional(HandlerDefinition handler, ClaimRequest request, HandlerBody<T> body)
            throws Exception {
        String consumer = handler.consumer();
        long[] handlerStart = {0L};
        HandlerResult<T> result;
        try {
            result = transactions.inTransaction(() -> {
                ClaimResult claim = store.claimCompleted(consumer, request);
                if (claim.outcome() != ClaimOutcome.CLAIMED) {
                    return notClaimed(handler, request, claim);
                }
                checkFingerprint(handler, request, claim.message());
                handlerStart[0] = System.nanoTime();
                try (IdempotencyContext.Scope scope = new IdempotencyContext(request.messageId(), consumer,
                        claim.message().attempts(), IdempotencyMode.TRANSACTIONAL).open()) {
                    return new HandlerResult<>(MessageOutcome.PROCESSED, body.run());
                }
            });
        }
        catch (Exception | Error ex) {
            if (handlerStart[0] != 0L) {
                metrics.handlerDuration(consumer, false, System.nanoTime() - handlerStart[0]);
                metrics.count(consumer, Outcome.FAILED);
            }
            else if (ex instanceof FingerprintMismatchException) {
                metrics.count(consumer, Outcome.REJECTED);
            }
            else if (!(ex instanceof MessageBusyException) && !(ex instanceof ReconciliationRequiredException)) {
                metrics.count(consumer, Outcome.FAILED);
            }
            throw ex;
        }
        if (result.outcome() == MessageOutcome.PROCESSED) {
            metrics.handlerDuration(consumer, true, System.nanoTime() - handlerStart[0]);
            metrics.count(consumer, Outcome.PROCESSED);
        }
        return result;
    }

    /**
     * DUPLICATE: check the fingerprint, count and skip. BUSY: count and throw the retryable busy
     * exception. A rejected fingerprint is counted by the caller.
     */
    private <T> HandlerResult<T> notClaimed(HandlerDefinition handler, ClaimRequest request, ClaimResult claim) {
        if (claim.message().status() == MessageStatus.RECONCILE) {
            metrics.count(handler.consumer(), Outcome.RECONCILE);
            throw awaitingReconciliation(handler, claim.message());
        }
        if (claim.outcome() == ClaimOutcome.BUSY) {
            metrics.count(handler.consumer(), Outcome.BUSY);
            throw busy(handler, claim.message());
        }
        checkFingerprint(handler, request, claim.message());
        metrics.count(handler.consumer(), Outcome.DUPLICATE);
        return HandlerResult.duplicate();
    }

    // ---------------------------------------------------------------- batches

    @Override
    public BatchResult executeBatch(HandlerDefinition handler, List<? extends InboundMessage> messages, BatchBody body)
            throws Exception {
        List<ClaimRequest> requests = new ArrayList<>(messages.size());
        int limit = messages.size();
        Exception stopCause = null;
        for (int i = 0; i < messages.size(); i++) {
            try {
                requests.add(new ClaimRequest(key(handler, messages.get(i)), messages.get(i).fingerprint()));
            }
            catch (IdempotencyException ex) {
                metrics.count(handler.consumer(), Outcome.REJECTED);
                limit = i;
                stopCause = ex;
                break;
            }
        }
        BatchRun run = mode(handler) == IdempotencyMode.TRANSACTIONAL
                ? transactionalBatch(handler, requests, limit, stopCause, body)
                : leaseBatch(handler, requests, limit, stopCause, body);
        if (run.stop < messages.size()) {
            throw new BatchFailedException(run.stop, Objects.requireNonNull(run.cause));
        }
        return new BatchResult(run.processed, run.duplicates);
    }

    private record BatchRun(int processed, int duplicates, int stop, @Nullable Throwable cause) {
    }

    /**
     * Which messages of a claimed prefix run: the {@code CLAIMED} first occurrences before the first
     * message that must stop the batch (a live claim elsewhere, a rejected fingerprint).
     */
    private static final class Plan {
        final List<Integer> run = new ArrayList<>();
        final List<String> runKeys = new ArrayList<>();
        int duplicates;
        int stop;
        @Nullable Exception cause;
        long token;
    }

    private Plan plan(HandlerDefinition handler, List<ClaimRequest> requests, List<ClaimResult> results, int limit,
            @Nullable Exception stopCause) {
        Plan plan = new Plan();
        plan.stop = limit;
        plan.cause = stopCause;
        Set<String> seen = new HashSet<>();
        for (int i = 0; i < results.size(); i++) {
            ClaimResult result = results.get(i);
            ClaimRequest request = requests.get(i);
            if (result.message().status() == MessageStatus.RECONCILE) {
                metrics.count(handler.consumer(), Outcome.RECONCILE);
                plan.stop = i;
                plan.cause = awaitingReconciliation(handler, result.message());
                break;
            }
            if (result.outcome() == ClaimOutcome.BUSY) {
                metrics.count(handler.consumer(), Outcome.BUSY);
                plan.stop = i;
                plan.cause = busy(handler, result.message());
                break;
            }
            try {
                checkFingerprint(handler, request, result.message());
            }
            catch (FingerprintMismatchException ex) {
                metrics.count(handler.consumer(), Outcome.REJECTED);
                plan.stop = i;
                plan.cause = ex;
                break;
            }
            if (result.outcome() == ClaimOutcome.CLAIMED && seen.add(request.messageId())) {
                IdempotencyException uncertain = reconcileIfUncertain(handler, result.message());
                if (uncertain != null) {
                    plan.stop = i;
                    plan.cause = uncertain;
                    break;
                }
                plan.run.add(i);
                plan.runKeys.add(request.messageId());
                plan.token = result.message().claimToken();
            }
            else {
                plan.duplicates++;
            }
        }
        return plan;
    }

    private BatchRun leaseBatch(HandlerDefinition handler, List<ClaimRequest> requests, int limit, @Nullable Exception stopCause,
            BatchBody body) throws Exception {
        String consumer = handler.consumer();
        List<ClaimResult> results = limit == 0 ? List.of() : store.claimAll(consumer, requests.subList(0, limit), handler.lease());
        // Every claim this call holds until it is completed or released. Whatever way the call
        // ends (a ledger call that throws included), what is still held is released in the finally
        // block: a claim left leased would make every redelivery BUSY for the whole lease.
        Set<String> held = new LinkedHashSet<>();
        long token = 0L;
        for (int i = 0; i < results.size(); i++) {
            if (results.get(i).outcome() == ClaimOutcome.CLAIMED) {
                held.add(requests.get(i).messageId());
                token = results.get(i).message().claimToken(); // one claim call: one token for all
            }
        }
        Throwable failure = null;
        try {
            Plan plan = plan(handler, requests, results, limit, stopCause);
            // Claims taken beyond the stop are not run now: give them back so the redelivery can run them.
            Set<String> notRun = new LinkedHashSet<>(held);
            plan.runKeys.forEach(notRun::remove);
            if (!notRun.isEmpty()) {
                store.releaseAll(consumer, token, notRun, "not run: the batch stopped at index " + plan.stop);
                held.removeAll(notRun);
            }
            if (plan.run.isEmpty()) {
                metrics.count(consumer, Outcome.DUPLICATE, plan.duplicates);
                return new BatchRun(0, plan.duplicates, plan.stop, plan.cause);
            }
            long start = System.nanoTime();
            try {
                body.run(List.copyOf(plan.run));
            }
            catch (BatchFailedException ex) {
                metrics.handlerDuration(consumer, false, System.nanoTime() - start);
                metrics.count(consumer, Outcome.FAILED);
                failure = ex.getCause() != null ? ex.getCause() : ex;
                List<String> done = new ArrayList<>();
                for (int k = 0; k < plan.run.size(); k++) {
                    if (plan.run.get(k) < ex.index()) {
                        done.add(plan.runKeys.get(k));
                    }
                }
                try {
                    completeHeld(consumer, token, done, held);
                    metrics.count(consumer, Outcome.PROCESSED, done.size());
                }
                catch (RuntimeException completeFailed) {
                    // The index would tell the container that the messages before it are done, and
                    // it would ack them; their rows are not COMPLETED (and are released below), so
                    // a later copy would run them again with nothing recording that they ran. The
                    // ledger's error goes instead, with the handler's report attached: the whole
                    // batch is delivered again (the handler ran them with their keys, which the
                    // provider deduplicates).
                    completeFailed.addSuppressed(ex);
                    throw completeFailed;
                }
                throw ex;
            }
            catch (Exception | Error ex) {
                metrics.handlerDuration(consumer, false, System.nanoTime() - start);
                metrics.count(consumer, Outcome.FAILED);
                throw ex;
            }
            metrics.handlerDuration(consumer, true, System.nanoTime() - start);
            completeHeld(consumer, token, plan.runKeys, held);
            metrics.count(consumer, Outcome.PROCESSED, plan.run.size());
            metrics.count(consumer, Outcome.DUPLICATE, plan.duplicates);
            return new BatchRun(plan.run.size(), plan.duplicates, plan.stop, plan.cause);
        }
        catch (Exception | Error ex) {
            if (failure == null) {
                failure = ex;
            }
            if (!held.isEmpty()) {
                // Attempt to release everything not completed; the original error goes on unchanged.
                releaseAllQuietly(consumer, token, List.copyOf(held), failure, ex);
                held.clear();
            }
            throw ex;
        }
    }

    /**
     * Completes {@code keys}, trying once more if the ledger call fails (the handler ran: a
     * completion saves running it again); what is completed (or was lost to a takeover) is no
     * longer held.
     */
    private void completeHeld(String consumer, long token, List<String> keys, Set<String> held) {
        if (keys.isEmpty()) {
            return;
        }
        try {
            completeAll(consumer, token, keys);
        }
        catch (RuntimeException first) {
            try {
                completeAll(consumer, token, keys);
            }
            catch (RuntimeException second) {
                first.addSuppressed(second);
                throw first;
            }
        }
        keys.forEach(held::remove);
    }

    /** Signals, inside the transaction, that the batch must stop earlier: roll back and run a shorter prefix. */
    private static final class Shrink extends RuntimeException {
        final int stop;
        final Exception cause;

        Shrink(int stop, Exception cause) {
            super(null, null, false, false);
            this.stop = stop;
            this.cause = cause;
        }
    }

    private BatchRun transactionalBatch(HandlerDefinition handler, List<ClaimRequest> requests, int limit,
            @Nullable Exception stopCause, BatchBody body) throws Exception {
        String consumer = handler.consumer();
        int currentLimit = limit;
        Throwable cause = stopCause;
        // Each pass runs a strictly shorter prefix, so the loop ends. A pass that must stop at a
        // message rolls back everything (its claims included) and the next pass runs just the
        // messages before it: in transactional mode the effects are rows, so running them again
        // in a fresh transaction is correct, and it is the only way to commit "the ones before".
        // Inside a transaction of the caller's that the passes join, that does not work: a failed
        // pass only marks the caller's transaction rollback-only (its rows stay, and a second pass
        // would see them as duplicates), and nothing of the batch can commit any more. Then no
        // message is done, and the batch stops at index 0 with the cause of the failure.
        // "Joined" means the ledger's DataSource takes part in the caller's transaction: with only a
        // transaction of another resource active (the container's Kafka transaction), every pass
        // runs in a JDBC transaction of its own, and the records before the stop do commit.
        boolean joined = transactions.isTransactionActive();
        while (currentLimit > 0) {
            int passLimit = currentLimit;
            long start = System.nanoTime();
            try {
                Plan plan = transactions.inTransaction(() -> {
                    List<ClaimResult> results = store.claimAllCompleted(consumer, requests.subList(0, passLimit));
                    Plan p = plan(handler, requests, results, passLimit, null);
                    if (p.stop < passLimit) {
                        throw new Shrink(p.stop, Objects.requireNonNull(p.cause));
                    }
                    if (!p.run.isEmpty()) {
                        body.run(List.copyOf(p.run));
                    }
                    return p;
                });
                if (!plan.run.isEmpty()) {
                    metrics.handlerDuration(consumer, true, System.nanoTime() - start);
                }
                metrics.count(consumer, Outcome.PROCESSED, plan.run.size());
                metrics.count(consumer, Outcome.DUPLICATE, plan.duplicates);
                return new BatchRun(plan.run.size(), plan.duplicates, passLimit, cause);
            }
            catch (Shrink shrink) {
                if (joined) {
                    return new BatchRun(0, 0, 0, shrink.cause);
                }
                currentLimit = shrink.stop;
                cause = shrink.cause;
            }
            catch (BatchFailedException ex) {
                metrics.handlerDuration(consumer, false, System.nanoTime() - start);
                metrics.count(consumer, Outcome.FAILED);
                if (ex.index() <= 0 || ex.index() >= passLimit) {
                    throw ex;
                }
                if (joined) {
                    return new BatchRun(0, 0, 0, ex.getCause() != null ? ex.getCause() : ex);
                }
                currentLimit = ex.index();
                cause = ex.getCause() != null ? ex.getCause() : ex;
            }
            catch (Exception | Error ex) {
                metrics.handlerDuration(consumer, false, System.nanoTime() - start);
                metrics.count(consumer, Outcome.FAILED);
                throw ex;
            }
        }
        return new BatchRun(0, 0, 0, cause);
    }

    // ---------------------------------------------------------------- helpers

    /**
     * The message's key, checked once for every mode and path before the ledger is touched: keys
     * are stored as they are (never truncated or re-encoded), so a key the ledger cannot store
     * exactly is rejected, not retried.
     */
    private String key(HandlerDefinition handler, InboundMessage message) {
        String key = keyResolver.resolve(handler, message);
        if (key.isEmpty()) {
            throw new InvalidIdempotencyKeyException("The idempotency key of a message of consumer '" + handler.consumer()
                    + "' is empty; a key must identify the message");
        }
        for (int i = 0; i < key.length(); i++) {
            char c = key.charAt(i);
            String problem = null;
            if (c == '\u0000') {
                // PostgreSQL cannot store NUL in text; other ledgers would then disagree with it.
                problem = "a NUL character (U+0000), which no ledger can store";
            }
            else if (Character.isHighSurrogate(c) && i + 1 < key.length() && Character.isLowSurrogate(key.charAt(i + 1))) {
                i++;
            }
            else if (Character.isSurrogate(c)) {
                problem = "an unpaired surrogate (U+" + Integer.toHexString(c).toUpperCase(java.util.Locale.ROOT)
                        + "), which has no UTF-8 form";
            }
            if (problem != null) {
                throw new InvalidIdempotencyKeyException("The idempotency key of a message of consumer '" + handler.consumer()
                        + "' contains " + problem + " at index " + i + "; it is rejected, not altered, so that two keys never"
                        + " collide. Send keys as plain text (e.g. hex or Base64 of a binary id)");
            }
        }
        if (key.length() > store.maxKeyLength()) {
            throw new InvalidIdempotencyKeyException("The idempotency key of a message of consumer '" + handler.consumer() + "' is "
                    + key.length() + " characters long; the ledger takes at most " + store.maxKeyLength()
                    + " (keys are rejected, not truncated, so that two long keys never collide). Key starts with: "
                    + key.substring(0, Math.min(40, key.length())));
        }
        return key;
    }

    private IdempotencyMode mode(HandlerDefinition handler) {
        if (handler.mode() != IdempotencyMode.AUTO) {
            return handler.mode();
        }
        return transactions.isTransactionActive() ? IdempotencyMode.TRANSACTIONAL : IdempotencyMode.LEASE;
    }

    private void checkFingerprint(HandlerDefinition handler, ClaimRequest request, ProcessedMessage row) {
        String expected = row.fingerprint();
        String actual = request.fingerprint();
        if (expected == null || actual == null || expected.equals(actual)) {
            return;
        }
        metrics.fingerprintMismatch(handler.consumer());
        String text = "Key '" + request.messageId() + "' of consumer '" + handler.consumer()
                + "' arrived with another payload than the first time (fingerprint " + abbreviate(actual) + ", ledger has "
                + abbreviate(expected) + "): a producer reused the key for another message";
        if (handler.fingerprintPolicy() == FingerprintMismatchPolicy.REJECT) {
            log.warn("{}; rejecting it", text);
            throw new FingerprintMismatchException(text);
        }
        log.warn("{}; treating it as the same message", text);
    }

    /**
     * Marks a lease-mode takeover whose message was first claimed longer ago than the window
     * {@code RECONCILE}, and returns the exception to throw; {@code null} if the claim may run.
     */
    private @Nullable IdempotencyException reconcileIfUncertain(HandlerDefinition handler, ProcessedMessage row) {
        Duration window = handler.reconcileAfter() != null ? handler.reconcileAfter() : reconcileAfter;
        if (window == null || window.isZero() || row.status() != MessageStatus.IN_PROGRESS || row.attempts() < 2
                || row.leaseUntil() == null) {
            return null;
        }
        Instant now = row.leaseUntil().minus(handler.lease());
        if (row.firstSeenAt().plus(window).isAfter(now)) {
            return null;
        }
        String text = "Key '" + row.messageId() + "' of consumer '" + handler.consumer() + "' was first claimed at "
                + row.firstSeenAt() + " and never completed (attempt " + row.attempts() + ", last error: " + row.lastError()
                + "); that is longer ago than the provider's idempotency-key window (" + window + "), so running it again could"
                + " repeat its effect. Marked RECONCILE and not run: check the provider for this key, then complete or delete"
                + " the ledger row";
        boolean marked;
        try {
            marked = store.markForReconciliation(row, "RECONCILE: uncertain outcome after " + window
                    + (row.lastError() != null ? "; last error: " + row.lastError() : ""));
        }
        catch (UnsupportedOperationException ex) {
            log.error("{}; the ledger cannot hold it for reconciliation ({}), so it is only released", text, ex.getMessage());
            releaseQuietly(row, new IllegalStateException(text));
            marked = true;
        }
        if (!marked) {
            // Lost the claim between the two statements: whoever holds it now decides.
            metrics.count(handler.consumer(), Outcome.BUSY);
            return busy(handler, row);
        }
        metrics.reconcileMarked(handler.consumer());
        metrics.count(handler.consumer(), Outcome.RECONCILE);
        log.error(text);
        return new ReconciliationRequiredException(handler.consumer(), row.messageId(), text);
    }

    private static ReconciliationRequiredException awaitingReconciliation(HandlerDefinition handler, ProcessedMessage row) {
        return new ReconciliationRequiredException(handler.consumer(), row.messageId(), "Key '" + row.messageId()
                + "' of consumer '" + handler.consumer() + "' awaits reconciliation (ledger status RECONCILE since an uncertain"
                + " outcome; " + row.lastError() + "): it is not run until an operator completes or deletes its ledger row");
    }

    private static String abbreviate(String fingerprint) {
        return fingerprint.length() > 12 ? fingerprint.substring(0, 12) + "…" : fingerprint;
    }

    private static MessageBusyException busy(HandlerDefinition handler, ProcessedMessage holder) {
        return new MessageBusyException("Key '" + holder.messageId() + "' of consumer '" + handler.consumer()
                + "' is being processed by another consumer (attempt " + holder.attempts() + ", lease until "
                + holder.leaseUntil() + "); it must be delivered again later");
    }

    private void completeAll(String consumer, long token, List<String> keys) {
        if (keys.isEmpty()) {
            return;
        }
        int completed = store.completeAll(consumer, token, keys);
        if (completed < keys.size()) {
            leaseLost(consumer, keys.subList(0, keys.size() - completed));
        }
    }

    private void leaseLost(String consumer, List<String> keys) {
        metrics.leaseLost(consumer, keys.size());
        log.warn("Consumer '{}' completed {} message(s) after their lease had expired and another consumer had taken them over"
                + " (e.g. {}); the handler ran more than once for them: raise the lease above the handler's longest run",
                consumer, keys.size(), keys.get(0));
    }

    private void releaseQuietly(ProcessedMessage claim, Throwable failure) {
        try {
            store.release(claim, summary(failure));
        }
        catch (RuntimeException ex) {
            // The original failure matters more; the lease will expire on its own.
            failure.addSuppressed(ex);
        }
    }

    /**
     * Releases {@code keys} with {@code failure} as the reason; if the ledger call fails, it is
     * tried once more, then attached to {@code thrown} (the exception going on): the leases expire on
     * their own.
     */
    private void releaseAllQuietly(String consumer, long token, List<String> keys, Throwable failure, Throwable thrown) {
        if (keys.isEmpty()) {
            return;
        }
        for (int attempt = 1; attempt <= 2; attempt++) {
            try {
                store.releaseAll(consumer, token, keys, summary(failure));
                return;
            }
            catch (RuntimeException ex) {
                // Once more: a claim left leased makes every redelivery BUSY for the whole lease.
                if (ex != thrown) {
                    thrown.addSuppressed(ex);
                }
            }
        }
    }

    private static String summary(Throwable failure) {
        return failure.getClass().getName() + (failure.getMessage() != null ? ": " + failure.getMessage() : "");
    }
}
