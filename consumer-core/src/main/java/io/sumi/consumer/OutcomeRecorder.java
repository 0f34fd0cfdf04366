package io.sumi.consumer;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.sumi.consumer.IdempotentExecutor.BatchBody;
import io.sumi.consumer.IdempotentExecutor.HandlerBody;
import io.sumi.consumer.exception.IdempotencyException;
import io.sumi.consumer.exception.LedgerUnavailableException;
import io.sumi.consumer.exception.MessageBusyException;
import io.sumi.consumer.exception.ReconciliationRequiredException;
import io.sumi.store.ClaimOutcome;
import io.sumi.store.ClaimRequest;
import io.sumi.store.ClaimResult;
import java.time.Instant;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one place where the executor's outcomes reach Micrometer: {@code sumi.messages} by outcome,
 * {@code sumi.handler.duration} by result, and the event counters. Meters are looked up once per
 * (consumer, outcome) and cached, so the hot path does no meter registration.
 *
 * <p>Who reports what, so that every message is counted once:
 * <ul>
 *   <li>A record's outcome is reported by the dispatcher ({@link DefaultIdempotentExecutor}) when
 *   the call ends, from how it ended: its result, or {@link Outcome#of(Throwable, boolean)} of its
 *   exception. The modes never count a record.</li>
 *   <li>A batch: the dispatcher reports the rejected key and the done messages
 *   ({@link #batch}); a mode reports each message that stops the batch while it is planned
 *   ({@link #refused}); a {@link HandlerRun} reports each failed run of the batch handler (a
 *   transactional batch may run its handler more than once per call); the dispatcher reports a
 *   failure of the call that the handler did not throw.</li>
 *   <li>Handler time is recorded by {@link HandlerRun} around the handler alone.</li>
 * </ul>
 *
 * <p>Skipped duplicates are also logged, one line each at DEBUG on the logger
 * {@value #DUPLICATES_LOGGER} ({@link #skippedDuplicate}), and once at INFO on the same logger when
 * a consumer's first {@value #LEADING_DUPLICATES_NOTICE} messages were all duplicates: a consumer
 * whose handler never runs (a rerun against an old ledger) must not look like one that receives
 * nothing.
 */
final class OutcomeRecorder {

    static final String MESSAGES = "sumi.messages";
    static final String HANDLER_DURATION = "sumi.handler.duration";
    static final String FINGERPRINT_MISMATCHES = "sumi.fingerprint.mismatches";
    static final String LEASES_LOST = "sumi.leases.lost";
    static final String RECONCILE_MARKED = "sumi.reconcile.marked";
    static final String LEASE_RENEWALS = "sumi.leases.renewals";
    static final String LEASE_OVERRUNS = "sumi.leases.overruns";
    static final String REPLIES = "sumi.replies";
    static final String LEDGER_UNAVAILABLE = "sumi.ledger.unavailable";

    /** How the renewal of a claim ended, the {@code result} tag of {@code sumi.leases.renewals}. */
    enum Renewal {
        /** The lease was extended. */
        RENEWED,
        /** The claim was gone: another consumer took it over while the handler ran. */
        LOST,
        /** The renewal statement failed (it is tried again at the next tick). */
        FAILED,
        /**
         * The lease was extended, but late: with less than a third of the lease left (counted
         * besides {@link #RENEWED}).
         */
        LATE;

        final String tag = name().toLowerCase(Locale.ROOT);
    }

    /** How a message ended, the {@code outcome} tag of {@code sumi.messages}. */
    enum Outcome {
        PROCESSED,
        DUPLICATE,
        BUSY,
        FAILED,
        REJECTED,
        RECONCILE,
        /** Refused before the handler ran: the ledger was unreachable (held and tried again). */
        LEDGER_UNAVAILABLE,
        /** The handler ran and said the message is not done (a nack): released or rolled back, not completed. */
        NOT_DONE;

        final String tag = name().toLowerCase(Locale.ROOT);

        /**
         * The outcome of a message whose call ended with {@code failure}: {@code FAILED} once its
         * handler has run (whatever it threw, and also when the handler succeeded but the ledger
         * could not complete or commit it); before that, what Sumi refused it for.
         */
        static Outcome of(Throwable failure, boolean handlerRan) {
            if (failure instanceof NotDoneSignal) {
                return NOT_DONE;
            }
            if (handlerRan) {
                return FAILED;
            }
            if (failure instanceof MessageBusyException) {
                return BUSY;
            }
            if (failure instanceof ReconciliationRequiredException) {
                return RECONCILE;
            }
            if (failure instanceof LedgerUnavailableException) {
                return LEDGER_UNAVAILABLE;
            }
            // A key that cannot be used, a rejected fingerprint.
            return failure instanceof IdempotencyException ? REJECTED : FAILED;
        }
    }

    /** The logger of skipped duplicates (named in docs/operations.md). */
    static final String DUPLICATES_LOGGER = "io.sumi.consumer.duplicates";

    /** After this many leading duplicates of a consumer (and nothing else), one INFO line says so. */
    static final int LEADING_DUPLICATES_NOTICE = 100;

    private static final Logger duplicatesLog = LoggerFactory.getLogger(DUPLICATES_LOGGER);
    private static final Logger log = LoggerFactory.getLogger(DefaultIdempotentExecutor.class);

    /** Marks a consumer whose leading run of duplicates is over (a message ended otherwise, or the notice was logged). */
    private static final int LEADING_OVER = -1;

    private record Key(String consumer, String what) {}

    private final MeterRegistry registry;
    private final Map<Key, Counter> counters = new ConcurrentHashMap<>();
    private final Map<Key, Timer> timers = new ConcurrentHashMap<>();
    private static final long WARN_EVERY_NANOS = GuardedLedger.WARN_EVERY.toNanos();
    /** Per consumer: when an unreachable ledger was last logged at WARN (this JVM's monotonic clock). */
    private final Map<String, AtomicLong> lastOutageWarning = new ConcurrentHashMap<>();

    private final Set<String> consumers = ConcurrentHashMap.newKeySet();
    /** Per consumer: how many messages it has seen, all duplicates, or {@link #LEADING_OVER}. */
    private final Map<String, AtomicInteger> leadingDuplicates = new ConcurrentHashMap<>();

    OutcomeRecorder(MeterRegistry registry) {
        this.registry = registry;
    }

    // ---------------------------------------------------------------- outcomes

    /** A new timer for one call's handler. */
    HandlerRun handlerRun(String consumer) {
        if (consumers.add(consumer)) {
            registerAtZero(consumer);
        }
        return new HandlerRun(consumer);
    }

    /**
     * A consumer's counters exist from its first message on, at 0: Prometheus's {@code increase()}
     * and {@code rate()} cannot see the first event of a series that appears with it, and alerts and
     * dashboards should find every series whatever has happened yet.
     */
    private void registerAtZero(String consumer) {
        for (Outcome outcome : Outcome.values()) {
            messages(consumer, outcome);
        }
        fingerprintMismatch(consumer, 0);
        leaseLost(consumer, 0);
        reconcileMarked(consumer, 0);
        // Read by the alerts SumiLeaseRenewalsLate and SumiLedgerUnreachable (of every consumer:
        // a transactional one keeps its renewals at 0).
        for (Renewal renewal : Renewal.values()) {
            leaseRenewal(consumer, renewal, 0);
        }
        for (String call : GuardedLedger.CALLS) {
            ledgerUnavailableCounter(consumer, call);
        }
    }

    /** One message ended with {@code outcome}. */
    void message(String consumer, Outcome outcome) {
        count(consumer, outcome, 1);
    }

    /** The messages of a batch that are done: processed by its handler, or skipped as duplicates. */
    void batch(String consumer, int processed, int duplicates) {
        count(consumer, Outcome.PROCESSED, processed);
        count(consumer, Outcome.DUPLICATE, duplicates);
    }

    /**
     * Logs a message skipped as a duplicate (DEBUG, logger {@value #DUPLICATES_LOGGER}); counted
     * with its outcome elsewhere.
     *
     * @param processedAt when its row was completed, {@code null} if the ledger's answer did not say
     */
    void skippedDuplicate(String consumer, String key, @Nullable Instant processedAt) {
        if (duplicatesLog.isDebugEnabled()) {
            duplicatesLog.debug(
                    "Skipped duplicate: consumer '{}', key '{}' was completed at {}; the handler did not run",
                    consumer,
                    key,
                    processedAt != null ? processedAt : "(not known)");
        }
    }

    /** Logs the duplicates a batch plan skipped: the messages before its stop that it does not run. */
    void skippedDuplicates(String consumer, List<ClaimRequest> requests, List<ClaimResult> results, BatchPlan plan) {
        if (!duplicatesLog.isDebugEnabled() || plan.duplicates() == 0) {
            return;
        }
        Set<Integer> run = Set.copyOf(plan.run());
        for (int i = 0; i < plan.stop() && i < results.size(); i++) {
            if (run.contains(i)) {
                continue;
            }
            ClaimResult result = results.get(i);
            if (result.outcome() == ClaimOutcome.CLAIMED) {
                // Claimed by this batch for an earlier message with the same key.
                duplicatesLog.debug(
                        "Skipped duplicate: consumer '{}', key '{}' is repeated in the batch; the handler runs it once",
                        consumer,
                        requests.get(i).messageId());
            } else {
                skippedDuplicate(
                        consumer, requests.get(i).messageId(), result.message().processedAt());
            }
        }
    }

    /** A message of a batch was not run because of {@code refusal} (a live claim, a fingerprint, reconciliation). */
    void refused(String consumer, Throwable refusal) {
        count(consumer, Outcome.of(refusal, false), 1);
    }

    // ---------------------------------------------------------------- events

    void fingerprintMismatch(String consumer) {
        fingerprintMismatch(consumer, 1);
    }

    private void fingerprintMismatch(String consumer, int amount) {
        event(consumer, FINGERPRINT_MISMATCHES, "Keys that arrived again with another payload", null, amount);
    }

    /**
     * One of Sumi's ledger calls failed because the ledger was unreachable: counted by call
     * ({@code sumi.ledger.unavailable}, tags {@code consumer} and {@code call}), and logged at WARN
     * at most once per {@link GuardedLedger#WARN_EVERY} and consumer.
     */
    void ledgerUnavailable(String consumer, String call, LedgerUnavailableException failure) {
        ledgerUnavailableCounter(consumer, call).increment();
        long now = System.nanoTime();
        AtomicLong last = lastOutageWarning.computeIfAbsent(consumer, c -> new AtomicLong(now - WARN_EVERY_NANOS));
        long before = last.get();
        if (now - before >= WARN_EVERY_NANOS && last.compareAndSet(before, now)) {
            log.warn(
                    "Consumer '{}': the ledger is unreachable ({} failed: {}). Its messages are held and tried again"
                            + " in place until the ledger answers, without spending the broker's redelivery budget"
                            + " (this warning is logged at most every {})",
                    consumer,
                    call,
                    failure.getCause() != null ? failure.getCause().toString() : failure.toString(),
                    GuardedLedger.WARN_EVERY);
        }
    }

    private Counter ledgerUnavailableCounter(String consumer, String call) {
        return counters.computeIfAbsent(
                new Key(consumer, LEDGER_UNAVAILABLE + "/" + call),
                key -> Counter.builder(LEDGER_UNAVAILABLE)
                        .description("Sumi's ledger calls that failed because the ledger's database was unreachable;"
                                + " their messages are held and tried again")
                        .tag("consumer", consumer)
                        .tag("call", call)
                        .register(registry));
    }

    void leaseLost(String consumer, int amount) {
        event(
                consumer,
                LEASES_LOST,
                "Claims whose lease was lost to another consumer while the handler ran",
                null,
                amount);
    }

    void reconcileMarked(String consumer) {
        reconcileMarked(consumer, 1);
    }

    private void reconcileMarked(String consumer, int amount) {
        event(
                consumer,
                RECONCILE_MARKED,
                "Messages whose outcome was uncertain and that were marked for reconciliation",
                null,
                amount);
    }

    /** {@code amount} claims whose renewal ended with {@code result}. */
    void leaseRenewal(String consumer, Renewal result, int amount) {
        event(
                consumer,
                LEASE_RENEWALS,
                "Lease renewals of claims whose handler was running, by result",
                result.tag,
                amount);
    }

    /**
     * A reply of a handler that keeps replies, by {@code result}: {@code stored} (kept with a
     * completed row), {@code replayed} (given to a duplicate), {@code missing} (a duplicate whose
     * row has no reply: completed before replies were kept, or the handler returned none),
     * {@code too_large} (over the max reply size: the message failed).
     */
    void reply(String consumer, String result) {
        event(consumer, REPLIES, "Replies of handlers that keep replies, by result", result, 1);
    }

    /** A handler ran past its max run time: its lease is no longer renewed. */
    void maxRunExceeded(String consumer) {
        event(
                consumer,
                LEASE_OVERRUNS,
                "Handlers that ran past their max run time; their lease was left to lapse",
                null,
                1);
    }

    /**
     * Counts {@code amount} events of the counter {@code name} of {@code consumer}, with a {@code result} tag if given.
     * An amount of 0 registers the counter at 0 (Prometheus' {@code increase()} misses a counter's first event
     * otherwise).
     */
    private void event(String consumer, String name, String description, @Nullable String result, int amount) {
        if (amount < 0) {
            return;
        }
        counters.computeIfAbsent(new Key(consumer, result == null ? name : name + "/" + result), key -> {
                    Counter.Builder builder =
                            Counter.builder(name).description(description).tag("consumer", consumer);
                    if (result != null) {
                        builder.tag("result", result);
                    }
                    return builder.register(registry);
                })
                .increment(amount);
    }

    // ---------------------------------------------------------------- meters

    private void count(String consumer, Outcome outcome, int amount) {
        if (amount > 0) {
            messages(consumer, outcome).increment(amount);
            watchLeadingDuplicates(consumer, outcome, amount);
        }
    }

    /**
     * One INFO line when a consumer's first {@value #LEADING_DUPLICATES_NOTICE} messages were all
     * duplicates. Counted loosely across threads (a message of another outcome racing the notice
     * may or may not stop it); after the run is over, one map read per message.
     */
    private void watchLeadingDuplicates(String consumer, Outcome outcome, int amount) {
        AtomicInteger seen = leadingDuplicates.computeIfAbsent(consumer, c -> new AtomicInteger());
        if (seen.get() == LEADING_OVER) {
            return;
        }
        if (outcome != Outcome.DUPLICATE) {
            seen.set(LEADING_OVER);
            return;
        }
        int total = seen.addAndGet(amount);
        if (total >= LEADING_DUPLICATES_NOTICE && seen.getAndSet(LEADING_OVER) != LEADING_OVER) {
            duplicatesLog.info(
                    "Consumer '{}': its first {} messages were all duplicates (their keys are COMPLETED in the ledger), so"
                            + " its handler has not run; expected after a redelivery, surprising for a fresh run against"
                            + " an old ledger. Each skipped duplicate is logged at DEBUG: logging.level.{}=DEBUG",
                    consumer,
                    total,
                    DUPLICATES_LOGGER);
        }
    }

    private Counter messages(String consumer, Outcome outcome) {
        return counters.computeIfAbsent(
                new Key(consumer, outcome.tag),
                key -> Counter.builder(MESSAGES)
                        .description("Messages seen by idempotent handlers, by outcome")
                        .tag("consumer", consumer)
                        .tag("outcome", outcome.tag)
                        .register(registry));
    }

    private void handlerDuration(String consumer, boolean success, long nanos) {
        String result = success ? "success" : "failure";
        timers.computeIfAbsent(
                        new Key(consumer, result),
                        key -> Timer.builder(HANDLER_DURATION)
                                .description("Time spent in idempotent handlers")
                                .tag("consumer", consumer)
                                .tag("result", result)
                                .register(registry))
                .record(nanos, TimeUnit.NANOSECONDS);
    }

    /**
     * One call's handler, timed: the modes run the handler through it, so the time is the handler's
     * alone (no ledger call) and the dispatcher can tell "failed before the handler ran" (a refusal)
     * from "failed once it had run" (a failure). One instance per call, used by one thread.
     */
    final class HandlerRun {

        private final String consumer;
        private boolean started;
        private @Nullable Throwable batchFailure;

        HandlerRun(String consumer) {
            this.consumer = consumer;
        }

        /** Runs a record's handler; its outcome is counted by the dispatcher, only the time here. */
        <T> @Nullable T run(HandlerBody<T> body) throws Exception {
            started = true;
            long start = System.nanoTime();
            @Nullable T value;
            try {
                value = body.run();
            } catch (Exception | Error ex) {
                handlerDuration(consumer, false, System.nanoTime() - start);
                throw ex;
            }
            handlerDuration(consumer, true, System.nanoTime() - start);
            return value;
        }

        /**
         * Runs a batch's handler; a failed run counts one failed message here (the one it reported,
         * or the batch), since a transactional batch may go on to a further pass after it.
         */
        void run(BatchBody body, List<Integer> indexes) throws Exception {
            started = true;
            long start = System.nanoTime();
            try {
                body.run(indexes);
            } catch (Exception | Error ex) {
                handlerDuration(consumer, false, System.nanoTime() - start);
                // A nack is counted once per nacking run, as a failure is.
                count(consumer, ex instanceof NotDoneSignal ? Outcome.NOT_DONE : Outcome.FAILED, 1);
                batchFailure = ex;
                throw ex;
            }
            handlerDuration(consumer, true, System.nanoTime() - start);
        }

        /** Whether the handler has run (or started to) in this call. */
        boolean started() {
            return started;
        }

        /**
         * Whether {@code failure} is what the batch handler threw, or carries it as suppressed (a
         * ledger error that replaced the handler's report), and is therefore counted already.
         */
        boolean threwFromBatchHandler(Throwable failure) {
            return batchFailure != null
                    && (failure == batchFailure
                            || List.of(failure.getSuppressed()).contains(batchFailure));
        }
    }
}
