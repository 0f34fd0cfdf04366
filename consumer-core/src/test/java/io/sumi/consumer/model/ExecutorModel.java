package io.sumi.consumer.model;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sumi.consumer.BatchResult;
import io.sumi.consumer.FingerprintMismatchPolicy;
import io.sumi.consumer.HandlerDefinition;
import io.sumi.consumer.HandlerResult;
import io.sumi.consumer.IdempotentExecutor;
import io.sumi.consumer.InboundMessage;
import io.sumi.consumer.MessageOutcome;
import io.sumi.consumer.NotDoneSignal;
import io.sumi.consumer.PollClaim;
import io.sumi.consumer.TransactionSupport;
import io.sumi.consumer.exception.BatchFailedException;
import io.sumi.consumer.exception.FingerprintMismatchException;
import io.sumi.consumer.exception.MessageBusyException;
import io.sumi.consumer.model.FaultInjectingStore.Crash;
import io.sumi.consumer.model.FaultInjectingStore.Point;
import io.sumi.consumer.model.Step.Batch;
import io.sumi.consumer.model.Step.BatchFault;
import io.sumi.consumer.model.Step.ConcurrentBatches;
import io.sumi.consumer.model.Step.Concurrently;
import io.sumi.consumer.model.Step.Deliver;
import io.sumi.consumer.model.Step.ExpireLeases;
import io.sumi.consumer.model.Step.Fault;
import io.sumi.consumer.model.Step.Outer;
import io.sumi.consumer.model.Step.Overtaken;
import io.sumi.consumer.model.Step.Prune;
import io.sumi.consumer.model.Step.TransactionKind;
import io.sumi.store.CachingProcessedMessageStore;
import io.sumi.store.LedgerPruner;
import io.sumi.store.MessageStatus;
import io.sumi.store.ProcessedMessage;
import io.sumi.store.ProcessedMessageStore;
import io.sumi.testing.TestDatabase;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.springframework.dao.TransientDataAccessException;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.ConnectionHolder;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.DriverManagerDataSource;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.UnexpectedRollbackException;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * A model-based test harness for {@link IdempotentExecutor} on a real ledger: it plays a sequence
 * of {@link Step}s against {@value #INSTANCES} simulated instances (each "JVM" with its own
 * executor, its own optional front cache and its own fault injector, all sharing one ledger: a
 * {@link ModelLedger}),
 * predicts the outcome of every delivery from a reference model of the ledger, and checks after
 * every step that the ledger agrees with the model.
 *
 * <p>The reference model: per key, {@link KeyState#FREE} (no row, or a claim whose lease has ended:
 * the next delivery claims it), {@link KeyState#HELD} (a live lease: the next delivery is BUSY) or
 * {@link KeyState#COMPLETED} (the next delivery is a DUPLICATE). Lease expiry is simulated in the
 * ledger ({@link ModelLedger#expireLeases}: the lease's end moved into the past), never by the JVM
 * clock.
 *
 * <p>Invariants checked (an {@link AssertionError} names the step that broke one):
 * <ul>
 *   <li>every delivery's outcome is the predicted one (PROCESSED / DUPLICATE / BUSY / the handler's
 *   own exception, the same instance / the batch index that stopped);</li>
 *   <li>nothing is acked (the executor returned, or a batch stopped after it) without a COMPLETED
 *   ledger row, and in transactional mode without exactly one committed effect row;</li>
 *   <li>BUSY never acks; a key whose claim was released, or whose holder died and whose lease
 *   expired, is claimed again, not BUSY; a failing ledger call leaves no lease behind on keys it
 *   was not about;</li>
 *   <li>lease mode never runs a handler for a key after it was completed;</li>
 *   <li>transactional mode, after every step: a key's effect row is committed (once) exactly when
 *   its ledger row is COMPLETED;</li>
 *   <li>at the end, after every undone key is delivered again until it is acked: transactional
 *   mode committed every delivered key's effect exactly once, lease mode ran every delivered key
 *   at least once, and every delivered key is COMPLETED.</li>
 * </ul>
 */
final class ExecutorModel implements AutoCloseable {

    static final int KEYS = 4;
    static final int INSTANCES = 3;
    static final Duration LEASE = Duration.ofMinutes(5);
    static final String EFFECTS = "sumi_model_effects";
    /** How far instance 1's clock runs ahead when {@link ModelConfig#skewedClock()}: more than a lease. */
    static final Duration SKEW = LEASE.plusMinutes(1);

    private static final ExecutorService THREADS = Executors.newCachedThreadPool(runnable -> {
        Thread thread = new Thread(runnable, "model-delivery");
        thread.setDaemon(true);
        return thread;
    });
    private static final Map<DataSource, Boolean> PREPARED = new ConcurrentHashMap<>();
    private static volatile @Nullable DataSourceTransactionManager foreign;

    /** What the reference model says about a key. */
    enum KeyState {
        FREE,
        HELD,
        COMPLETED
    }

    /** A handler failure the harness throws on purpose. */
    static final class HandlerFailure extends RuntimeException {
        HandlerFailure(String message) {
            super(message);
        }
    }

    /** A checked handler failure. */
    static final class CheckedHandlerFailure extends Exception {
        CheckedHandlerFailure(String message) {
            super(message);
        }
    }

    /** One simulated JVM. */
    private final class Instance {
        final int id;
        final FaultInjectingStore store;
        final IdempotentExecutor executor;
        boolean restart;

        Instance(int id) {
            this.id = id;
            Clock clock = config.skewedClock() && id == 1 ? Clock.offset(Clock.systemUTC(), SKEW) : Clock.systemUTC();
            ProcessedMessageStore ledger = ExecutorModel.this.ledger.store(clock);
            if (config.cache(id)) {
                ledger = new CachingProcessedMessageStore(ledger, 10_000, Duration.ofHours(1));
            }
            this.store = new FaultInjectingStore(ledger);
            PlatformTransactionManager transactions = misconfigured() ? foreignTransactions() : ledgerTransactions;
            IdempotentExecutor.Builder builder = IdempotentExecutor.builder(store)
                    .transactionSupport(TransactionSupport.of(transactions))
                    .meterRegistry(new SimpleMeterRegistry());
            if (config.budgeted()) {
                // Each instance (a JVM of its own) has its own budgets.
                builder.decorator(Objects.requireNonNull(budgets, "a budgeted configuration needs the budget decorator")
                        .get());
            }
            this.executor = builder.build();
        }

        /** Wired to another resource's transaction manager (see {@link ModelConfig#foreignTransactionManager()}). */
        boolean misconfigured() {
            return config.foreignTransactionManager() && id == INSTANCES - 1;
        }
    }

    /** The listener's own transaction around several deliveries ({@link Outer}). */
    private static final class OuterScope {
        final boolean joined;
        final Map<String, KeyState> overlay = new HashMap<>();
        final List<String> acks = new ArrayList<>();
        boolean doomed;

        OuterScope(boolean joined) {
            this.joined = joined;
        }
    }

    /** An asynchronous handler's future that has not completed yet, and the claim it was started under. */
    private record PendingAsync(
            Instance instance,
            String key,
            boolean succeeds,
            long claimToken,
            CompletableFuture<Object> work,
            CompletableFuture<HandlerResult<Object>> result,
            HandlerFailure failure) {}

    /** What the handler of one delivery did. */
    private static final class Probe {
        final List<List<Integer>> calls = new CopyOnWriteArrayList<>();
        final Set<String> ran = ConcurrentHashMap.newKeySet();
        volatile @Nullable Throwable failure;
        volatile boolean markedRollbackOnly;

        <T extends Throwable> T fail(T failure) {
            this.failure = failure;
            return failure;
        }
    }

    private final ModelLedger ledger;
    private final ModelConfig config;
    /**
     * A new budget decorator for each instance of a {@link ModelConfig#budgeted() budgeted}
     * configuration (sumi-budgets' registry, with a budget {@code model} that never runs out: its
     * model tests run this model with it); {@code null}: no configuration may be budgeted.
     */
    private final @Nullable Supplier<IdempotentExecutor.Decorator> budgets;

    /** The database of the listeners' transactions and the effect rows (the ledger's, for a JDBC ledger). */
    private final DataSource dataSource;

    private final JdbcTemplate jdbc;
    private final DataSourceTransactionManager ledgerTransactions;
    private final ProcessedMessageStore reader;
    private final String consumer = "model-" + UUID.randomUUID();
    private final HandlerDefinition handler;
    private final Instance[] instances = new Instance[INSTANCES];

    private final Map<String, KeyState> state = new HashMap<>();
    private final Set<String> delivered = new TreeSet<>();
    private final Set<String> pending = new TreeSet<>();
    private final Set<String> everCompleted = ConcurrentHashMap.newKeySet();
    private final Map<String, AtomicInteger> leaseRuns = new ConcurrentHashMap<>();
    private final List<String> violations = new CopyOnWriteArrayList<>();
    private final List<String> history = new ArrayList<>();
    private @Nullable OuterScope outer;
    /** The futures of {@link Step.AsyncStart}s still pending, oldest first. */
    private final List<PendingAsync> pendingAsync = new ArrayList<>();
    /** Keys whose state the last step could not predict (allowed states), checked and re-read by {@link #verifyLedger}. */
    private final Map<String, Set<KeyState>> loose = new HashMap<>();

    ExecutorModel(ModelLedger ledger, ModelConfig config, @Nullable Supplier<IdempotentExecutor.Decorator> budgets) {
        if (config.transactional() && !ledger.transactional()) {
            throw new IllegalArgumentException(ledger.name() + " cannot join a transaction: no transactional run");
        }
        this.ledger = ledger;
        this.config = config;
        this.budgets = budgets;
        this.dataSource = ledger.dataSource();
        this.jdbc = new JdbcTemplate(dataSource);
        PREPARED.computeIfAbsent(dataSource, db -> {
            jdbc.execute("CREATE TABLE IF NOT EXISTS " + EFFECTS
                    + " (consumer VARCHAR(200) NOT NULL, message_id VARCHAR(200) NOT NULL)");
            return true;
        });
        this.ledgerTransactions = new DataSourceTransactionManager(dataSource);
        this.reader = ledger.reader();
        this.handler = HandlerDefinition.builder(consumer)
                .mode(config.mode())
                .lease(LEASE)
                .budget(config.budgeted() ? "model" : null)
                .build();
        for (int i = 0; i < INSTANCES; i++) {
            instances[i] = new Instance(i);
        }
        for (int k = 0; k < KEYS; k++) {
            state.put(key(k), KeyState.FREE);
        }
    }

    /** Plays {@code steps}, then delivers every undone key again until it is acked, and checks the end state. */
    static void check(TestDatabase database, ModelConfig config, List<Step> steps) {
        check(ModelLedger.of(database), config, steps, null);
    }

    /** {@link #check(TestDatabase, ModelConfig, List)} on any ledger, budgeted configurations under {@code budgets}' decorators. */
    static void check(
            ModelLedger ledger,
            ModelConfig config,
            List<Step> steps,
            @Nullable Supplier<IdempotentExecutor.Decorator> budgets) {
        try (ExecutorModel model = new ExecutorModel(ledger, config, budgets)) {
            model.run(steps);
        }
    }

    void run(List<Step> steps) {
        for (Step step : steps) {
            top(step);
        }
        finish();
    }

    @Override
    public void close() {
        ledger.delete(consumer);
        jdbc.update("DELETE FROM " + EFFECTS + " WHERE consumer = ?", consumer);
    }

    // ---------------------------------------------------------------- steps

    private void top(Step step) {
        history.add(step.toString());
        loose.clear();
        if (step instanceof Deliver deliver) {
            deliver(deliver);
        } else if (step instanceof Step.AsyncDeliver async) {
            asyncDeliver(async);
        } else if (step instanceof Step.AsyncStart async) {
            asyncStart(async);
        } else if (step instanceof Step.AsyncEnd end) {
            asyncEnd(end);
        } else if (step instanceof Batch batch) {
            batch(batch);
        } else if (step instanceof Step.Poll poll) {
            poll(poll);
        } else if (step instanceof Step.Unrun unrun) {
            unrun(unrun);
        } else if (step instanceof Step.Reused reused) {
            reused(reused);
        } else if (step instanceof Concurrently concurrently) {
            concurrently(concurrently);
        } else if (step instanceof ConcurrentBatches batches) {
            concurrentBatches(batches);
        } else if (step instanceof Overtaken overtaken) {
            overtaken(overtaken);
        } else if (step instanceof Prune) {
            LedgerPruner.builder(reader).build().prune();
        } else if (step instanceof ExpireLeases) {
            expireLeases();
        } else {
            outer((Outer) step);
        }
        if (!violations.isEmpty()) {
            fail(String.join("; ", violations));
        }
        for (int i = 0; i < INSTANCES; i++) {
            if (instances[i].store.dead() || instances[i].restart) {
                // The JVM died with the futures it had pending: they never complete, their claims lapse.
                Instance gone = instances[i];
                if (pendingAsync.removeIf(p -> p.instance() == gone)) {
                    history.add("  instance " + i + " died with pending futures: they never complete");
                }
                gone.executor.close(); // its lease renewals die with it
                instances[i] = new Instance(i); // the JVM comes back: empty cache, no claims of its own
            } else {
                instances[i].store.crashAt(null);
                instances[i].store.failOnceAt(null);
                instances[i].store.freeze(false);
            }
        }
        verifyLedger();
    }

    private void expireLeases() {
        ledger.expireLeases(consumer);
        state.replaceAll((key, s) -> s == KeyState.HELD ? KeyState.FREE : s);
    }

    /** One record delivery; returns what the executor threw ({@code null}: it returned). */
    private @Nullable Throwable deliver(Deliver step) {
        Instance instance = instances[step.instance()];
        String key = key(step.key());
        Fault fault = step.fault();
        noteDelivered(key);
        KeyState before = stateOf(key);
        instance.store.clearInjected();
        switch (fault) {
            case CRASH_BEFORE_CLAIM -> instance.store.crashAt(Point.CLAIM);
            case CRASH_AT_COMPLETE -> instance.store.crashAt(Point.COMPLETE);
            case STORE_ERROR_AT_COMPLETE -> instance.store.failOnceAt(Point.COMPLETE);
            case STORE_ERROR_AT_RELEASE -> instance.store.failOnceAt(Point.RELEASE);
            default -> {}
        }
        Probe probe = new Probe();
        HandlerResult<?> result = null;
        Throwable thrown = null;
        try {
            result = instance.executor.execute(handler, message(key), () -> recordHandler(instance, key, fault, probe));
        } catch (Throwable ex) {
            thrown = ex;
        }
        instance.store.crashAt(null);
        instance.store.failOnceAt(null);
        if (fault == Fault.CRASH_BEFORE_ACK) {
            instance.restart = true;
        }
        if (probe.calls.size() > 1) {
            fail("the handler of " + key + " ran " + probe.calls.size() + " times in one delivery");
        }
        boolean ran = !probe.calls.isEmpty();
        boolean nacked = result != null && result.outcome() == MessageOutcome.NOT_DONE;
        if (outer != null && outer.joined && (thrown != null || probe.markedRollbackOnly || nacked)) {
            // A nack in a joined transaction marks it rollback-only, as a failure does.
            outer.doomed = true;
        }
        String outcome = describe(result, thrown);

        if (instance.misconfigured() || instance.store.injected() != null) {
            // Not predicted exactly: the ledger decides what the key's state is now; the invariants still hold.
            if (fault == Fault.STORE_ERROR_AT_RELEASE && probe.failure != null && thrown != probe.failure) {
                fail("the handler's failure was not propagated unchanged: " + outcome);
            }
            if (instance.store.injected() != null && !instance.store.failedIds().contains(key)) {
                loose.put(key, ran ? EnumSet.of(KeyState.COMPLETED, KeyState.FREE) : EnumSet.of(before));
            } else {
                loose.put(key, EnumSet.allOf(KeyState.class));
            }
            if (thrown == null && fault != Fault.CRASH_BEFORE_ACK && !nacked) {
                ack(key, "record delivery " + outcome);
            }
            return thrown;
        }

        if (fault == Fault.CRASH_BEFORE_CLAIM) {
            expect(thrown instanceof Crash && !ran, "a crash before the claim", outcome);
            return thrown;
        }
        if (before == KeyState.COMPLETED) {
            expect(
                    thrown == null && result != null && result.outcome() == MessageOutcome.DUPLICATE && !ran,
                    "DUPLICATE (the key is completed)",
                    outcome);
            if (fault != Fault.CRASH_BEFORE_ACK) {
                ack(key, "DUPLICATE");
            }
            return thrown;
        }
        if (before == KeyState.HELD) {
            expect(thrown instanceof MessageBusyException && !ran, "BUSY (a live lease holds the key)", outcome);
            return thrown;
        }
        // FREE: the delivery claims the key and runs the handler once.
        if (!ran) {
            fail("expected the handler to run (the key is free: never claimed, released, or its lease expired), got "
                    + outcome);
        }
        boolean transactional = config.transactional();
        switch (fault) {
            case FAIL_BEFORE_EFFECT, FAIL_AFTER_EFFECT, FAIL_CHECKED, STORE_ERROR_AT_RELEASE -> {
                expect(thrown != null && thrown == probe.failure, "the handler's own exception, unchanged", outcome);
                setState(key, KeyState.FREE);
            }
            case NACK -> {
                expect(
                        thrown == null && nacked,
                        "NOT_DONE (the handler nacked: released or rolled back, not acked)",
                        outcome);
                setState(key, KeyState.FREE);
            }
            case ROLLBACK_ONLY -> {
                if (transactional && outer != null && outer.joined) {
                    // A participating transaction does not throw; the listener's transaction cannot commit.
                    expect(
                            thrown == null && result.outcome() == MessageOutcome.PROCESSED,
                            "PROCESSED (joined, rollback-only)",
                            outcome);
                    setState(key, KeyState.COMPLETED);
                } else if (transactional) {
                    expect(
                            thrown instanceof UnexpectedRollbackException,
                            "UnexpectedRollbackException (rolled back, not acked)",
                            outcome);
                    setState(key, KeyState.FREE);
                } else {
                    processed(key, fault, result, thrown, outcome);
                }
            }
            case CRASH_IN_HANDLER -> {
                expect(thrown instanceof Crash, "the crash", outcome);
                setState(key, transactional ? KeyState.FREE : KeyState.HELD);
            }
            case CRASH_AT_COMPLETE -> {
                if (transactional) {
                    processed(key, fault, result, thrown, outcome);
                } else {
                    expect(thrown instanceof Crash, "the crash", outcome);
                    setState(key, KeyState.HELD);
                }
            }
            default -> processed(key, fault, result, thrown, outcome);
        }
        if (outer != null && outer.joined) {
            // The claim's row stays in the listener's transaction whatever became of the handler: a
            // failure only dooms that transaction, it does not undo the row before it ends.
            setState(key, KeyState.COMPLETED);
        }
        return thrown;
    }

    /** One record delivery with an asynchronous handler (see {@link Step.AsyncDeliver}). */
    private void asyncDeliver(Step.AsyncDeliver step) {
        Instance instance = instances[step.instance()];
        String key = key(step.key());
        noteDelivered(key);
        KeyState before = stateOf(key);
        instance.store.clearInjected();
        // Transactional mode and budgeted handlers wait for the future on the calling thread.
        boolean executorWaits = config.transactional() || handler.budget() != null;
        HandlerFailure failure = new HandlerFailure("the future of " + key + " fails");
        CompletableFuture<Object> work = new CompletableFuture<>();
        AtomicInteger calls = new AtomicInteger();
        CompletableFuture<HandlerResult<Object>> result = null;
        Throwable thrown = null;
        try {
            result = instance.executor.executeAsync(handler, message(key), () -> {
                calls.incrementAndGet();
                if (executorWaits) {
                    complete(work, key, step.succeeds(), failure);
                }
                return work;
            });
        } catch (Throwable ex) {
            thrown = ex;
        }
        if (calls.get() > 1) {
            fail("the handler of " + key + " ran " + calls.get() + " times in one delivery");
        }
        boolean ran = calls.get() == 1;
        String outcome = describe(result, thrown);
        if (instance.misconfigured()) {
            if (ran && !work.isDone()) {
                complete(work, key, step.succeeds(), failure);
            }
            loose.put(key, EnumSet.allOf(KeyState.class));
            if (thrown == null && result != null && outcomeOf(result) != null) {
                ack(key, "async delivery " + outcome);
            }
            return;
        }
        if (!asyncRan(key, before, ran, result, thrown, outcome)) {
            return;
        }
        if (!executorWaits) {
            // The row follows the future: the claim is still held, nothing is acked yet.
            expect(!result.isDone(), "a pending result while the handler's future runs", outcome);
            Optional<MessageStatus> status = reader.find(consumer, key).map(ProcessedMessage::status);
            expect(
                    status.equals(Optional.of(MessageStatus.IN_PROGRESS)),
                    "the row IN_PROGRESS while the future runs",
                    String.valueOf(status));
            // Completed later, on another thread.
            THREADS.submit(() -> complete(work, key, step.succeeds(), failure));
        }
        HandlerResult<Object> done = outcomeOf(result);
        if (step.succeeds()) {
            expect(
                    done != null && done.outcome() == MessageOutcome.PROCESSED,
                    "PROCESSED once the future succeeded",
                    describe(done, null));
            setState(key, KeyState.COMPLETED);
            ack(key, "PROCESSED (async)");
        } else {
            Throwable cause = failureOf(result);
            expect(
                    cause == failure,
                    "the future's own exception, unchanged, after the claim was released",
                    describe(done, cause));
            setState(key, KeyState.FREE);
        }
    }

    /**
     * Starts an asynchronous handler whose future stays pending ({@link Step.AsyncStart}): the
     * claim is held (BUSY for everyone) until an {@link Step.AsyncEnd} completes the future.
     */
    private void asyncStart(Step.AsyncStart step) {
        if (config.transactional() || handler.budget() != null) {
            // The executor waits for the future on the calling thread: it cannot stay pending.
            asyncDeliver(new Step.AsyncDeliver(step.instance(), step.key(), step.succeeds()));
            return;
        }
        Instance instance = instances[step.instance()];
        String key = key(step.key());
        noteDelivered(key);
        KeyState before = stateOf(key);
        instance.store.clearInjected();
        CompletableFuture<Object> work = new CompletableFuture<>();
        AtomicInteger calls = new AtomicInteger();
        CompletableFuture<HandlerResult<Object>> result = null;
        Throwable thrown = null;
        try {
            result = instance.executor.executeAsync(handler, message(key), () -> {
                calls.incrementAndGet();
                effect(key); // the work has begun: the provider is called before the future completes
                return work;
            });
        } catch (Throwable ex) {
            thrown = ex;
        }
        if (calls.get() > 1) {
            fail("the handler of " + key + " ran " + calls.get() + " times in one delivery");
        }
        boolean ran = calls.get() == 1;
        String outcome = describe(result, thrown);
        if (!asyncRan(key, before, ran, result, thrown, outcome)) {
            return;
        }
        expect(!result.isDone(), "a pending result while the handler's future runs", outcome);
        Optional<ProcessedMessage> row = reader.find(consumer, key);
        expect(
                row.isPresent() && row.get().status() == MessageStatus.IN_PROGRESS,
                "the row IN_PROGRESS while the future runs",
                row.map(ExecutorModel::summary).orElse("no row"));
        setState(key, KeyState.HELD);
        pendingAsync.add(new PendingAsync(
                instance,
                key,
                step.succeeds(),
                row.get().claimToken(),
                work,
                result,
                new HandlerFailure("the future of " + key + " fails after its effect")));
    }

    /**
     * The oldest pending future completes ({@link Step.AsyncEnd}). While its claim is still its
     * own (the row IN_PROGRESS with its claim token, whether or not its lease has ended), the row
     * follows the future: COMPLETED and acked when it succeeds, released when it fails. Otherwise
     * (taken over, given back, pruned) the completion is stale: it must leave the row as it found
     * it (fenced by the token), a success is acked only if the row is COMPLETED (the taker did it),
     * else it is a retryable BUSY; a failure is the future's own exception.
     */
    private void asyncEnd(Step.AsyncEnd step) {
        if (pendingAsync.isEmpty()) {
            history.add("  (no future pending)");
            return;
        }
        PendingAsync pending = pendingAsync.remove(0);
        String key = pending.key();
        if (step.takerFault() != null) {
            // While the future is pending, its lease lapses and the next instance takes the message over.
            int taker = (pending.instance().id + 1) % INSTANCES;
            Deliver takeOver = new Deliver(taker, index(key), step.takerFault());
            history.add("  while the future of " + key + " is pending, its lease lapses and: " + takeOver);
            expireLeases();
            deliver(takeOver);
            if (!violations.isEmpty()) {
                fail(String.join("; ", violations));
            }
        }
        Optional<ProcessedMessage> found = reader.find(consumer, key);
        boolean own = found.isPresent()
                && found.get().status() == MessageStatus.IN_PROGRESS
                && found.get().claimToken() == pending.claimToken();
        history.add("  the future of " + key + " completes " + (pending.succeeds() ? "successfully" : "exceptionally")
                + (own
                        ? " (its claim is still its own)"
                        : " (its claim is gone: the ledger has "
                                + found.map(ExecutorModel::summary).orElse("no row") + ")"));
        // Completed on another thread, as a real future is (an HTTP client's, a reactive scheduler's).
        Future<?> completing = THREADS.submit(() -> {
            if (pending.succeeds()) {
                pending.work().complete(key);
            } else {
                pending.work().completeExceptionally(pending.failure());
            }
        });
        try {
            completing.get(30, TimeUnit.SECONDS);
        } catch (Exception ex) {
            fail("completing the future of " + key + " failed: " + ex);
        }
        HandlerResult<Object> done = outcomeOf(pending.result());
        Throwable failure = done == null ? failureOf(pending.result()) : null;
        String outcome = describe(done, failure);
        if (!own) {
            Optional<ProcessedMessage> now = reader.find(consumer, key);
            expect(
                    sameClaim(found, now),
                    "a stale completion to leave the row as it found it (fenced by the claim token): "
                            + found.map(ExecutorModel::summary).orElse("no row"),
                    now.map(ExecutorModel::summary).orElse("no row"));
        }
        if (!pending.succeeds()) {
            expect(failure == pending.failure(), "the future's own exception, unchanged", outcome);
            if (own) {
                setState(key, KeyState.FREE);
            }
            return;
        }
        if (own || found.isPresent() && found.get().isCompleted()) {
            expect(
                    done != null && done.outcome() == MessageOutcome.PROCESSED,
                    own ? "PROCESSED once the future succeeded" : "PROCESSED (the taker completed the message)",
                    outcome);
            setState(key, KeyState.COMPLETED);
            ack(key, "PROCESSED (async" + (own ? ")" : ", after its claim was taken over and completed)"));
        } else {
            expect(
                    failure instanceof MessageBusyException,
                    "MessageBusyException (the claim was lost and the message is not COMPLETED: delivered again)",
                    outcome);
        }
    }

    /** Whether two reads of a row show the same claim in the same state. */
    private static boolean sameClaim(Optional<ProcessedMessage> before, Optional<ProcessedMessage> after) {
        if (before.isEmpty() || after.isEmpty()) {
            return before.isEmpty() == after.isEmpty();
        }
        ProcessedMessage was = before.get();
        ProcessedMessage now = after.get();
        return was.status() == now.status()
                && was.claimToken() == now.claimToken()
                && was.attempts() == now.attempts()
                && java.util.Objects.equals(was.leaseUntil(), now.leaseUntil())
                && java.util.Objects.equals(was.lastError(), now.lastError());
    }

    /**
     * Checks an asynchronous delivery's answer for a key that was not free (DUPLICATE, acked; BUSY)
     * and returns {@code false} then; for a free key, that the handler ran, and returns {@code true}.
     */
    private boolean asyncRan(
            String key,
            KeyState before,
            boolean ran,
            @Nullable CompletableFuture<HandlerResult<Object>> result,
            @Nullable Throwable thrown,
            String outcome) {
        if (before == KeyState.COMPLETED) {
            expect(
                    thrown == null
                            && result != null
                            && result.isDone()
                            && !ran
                            && result.join().outcome() == MessageOutcome.DUPLICATE,
                    "DUPLICATE (the key is completed)",
                    outcome);
            ack(key, "DUPLICATE");
            return false;
        }
        if (before == KeyState.HELD) {
            expect(thrown instanceof MessageBusyException && !ran, "BUSY (a live lease holds the key)", outcome);
            return false;
        }
        if (!ran || result == null) {
            fail("expected the asynchronous handler to run (the key is free), got " + outcome);
        }
        return true;
    }

    /** The handler's asynchronous work: the effect, then success; or a failure before the effect. */
    private void complete(CompletableFuture<Object> work, String key, boolean succeeds, HandlerFailure failure) {
        if (succeeds) {
            effect(key);
            work.complete(key);
        } else {
            work.completeExceptionally(failure);
        }
    }

    private static @Nullable HandlerResult<Object> outcomeOf(CompletableFuture<HandlerResult<Object>> result) {
        try {
            return result.get(30, TimeUnit.SECONDS);
        } catch (java.util.concurrent.ExecutionException ex) {
            return null;
        } catch (InterruptedException | java.util.concurrent.TimeoutException ex) {
            throw new AssertionError("the asynchronous result did not complete", ex);
        }
    }

    private static @Nullable Throwable failureOf(CompletableFuture<HandlerResult<Object>> result) {
        try {
            result.get(30, TimeUnit.SECONDS);
            return null;
        } catch (java.util.concurrent.ExecutionException ex) {
            return ex.getCause();
        } catch (InterruptedException | java.util.concurrent.TimeoutException ex) {
            throw new AssertionError("the asynchronous result did not complete", ex);
        }
    }

    private void processed(
            String key, Fault fault, @Nullable HandlerResult<?> result, @Nullable Throwable thrown, String outcome) {
        expect(thrown == null && result != null && result.outcome() == MessageOutcome.PROCESSED, "PROCESSED", outcome);
        setState(key, KeyState.COMPLETED);
        if (fault != Fault.CRASH_BEFORE_ACK) {
            ack(key, "PROCESSED");
        }
    }

    private Object recordHandler(Instance instance, String key, Fault fault, Probe probe) throws Exception {
        probe.calls.add(List.of(0));
        probe.ran.add(key);
        if (fault == Fault.FAIL_BEFORE_EFFECT) {
            throw probe.fail(new HandlerFailure("handler of " + key + " fails before its effect"));
        }
        effect(key);
        switch (fault) {
            case FAIL_AFTER_EFFECT, STORE_ERROR_AT_RELEASE ->
                throw probe.fail(new HandlerFailure("handler of " + key + " fails"));
            case FAIL_CHECKED -> throw probe.fail(new CheckedHandlerFailure("handler of " + key + " fails (checked)"));
            case ROLLBACK_ONLY -> markRollbackOnly(probe);
            case CRASH_IN_HANDLER -> throw instance.store.die("in the handler of " + key);
            // What a binder's body does after a listener that nacked returned.
            case NACK -> throw NotDoneSignal.of(key);
            default -> {}
        }
        return key;
    }

    /** One batch delivery; returns what the executor threw. */
    private @Nullable Throwable batch(Batch step) {
        Instance instance = instances[step.instance()];
        List<String> keys = step.keys().stream().map(ExecutorModel::key).toList();
        keys.forEach(this::noteDelivered);
        BatchFault fault = step.fault();
        boolean transactional = config.transactional();
        instance.store.clearInjected();
        switch (fault) {
            case CRASH_AT_COMPLETE -> instance.store.crashAt(Point.COMPLETE);
            case STORE_ERROR_AT_COMPLETE -> instance.store.failOnceAt(Point.COMPLETE);
            case STORE_ERROR_AT_RELEASE -> instance.store.failOnceAt(Point.RELEASE);
            case STORE_DOWN_AT_COMPLETE -> instance.store.failAlwaysAt(Point.COMPLETE);
            default -> {}
        }
        // The plan the executor must make: the first live claim stops the batch; the first
        // occurrence of each free key before it runs; completed keys and repeats are duplicates.
        Map<String, KeyState> before = new HashMap<>();
        keys.forEach(k -> before.put(k, stateOf(k)));
        int stop = keys.size();
        List<Integer> run = new ArrayList<>();
        Set<String> seen = new HashSet<>();
        for (int i = 0; i < keys.size(); i++) {
            KeyState s = before.get(keys.get(i));
            if (s == KeyState.HELD) {
                stop = i;
                break;
            }
            if (s == KeyState.FREE && seen.add(keys.get(i))) {
                run.add(i);
            }
        }
        // The claims at or after the stop are given back before the handler runs: unrun.
        Set<String> givenBack = new TreeSet<>();
        for (int i = stop + 1; i < keys.size(); i++) {
            if (before.get(keys.get(i)) == KeyState.FREE) {
                givenBack.add(keys.get(i));
            }
        }
        run.forEach(i -> givenBack.remove(keys.get(i)));
        Map<String, Optional<ProcessedMessage>> rowsBefore = rows(givenBack);
        Probe probe = new Probe();
        BatchResult result = null;
        Throwable thrown = null;
        try {
            result = instance.executor.executeBatch(
                    handler, messages(keys), indexes -> batchHandler(instance, keys, step, indexes, probe));
        } catch (Throwable ex) {
            thrown = ex;
        }
        instance.store.crashAt(null);
        instance.store.failOnceAt(null);
        if (fault == BatchFault.CRASH_BEFORE_ACK) {
            instance.restart = true;
        }
        if (outer != null && outer.joined && (thrown != null || probe.markedRollbackOnly)) {
            outer.doomed = true;
        }
        String outcome = describe(result, thrown) + ", handler calls " + probe.calls;
        boolean ackable = fault != BatchFault.CRASH_BEFORE_ACK;

        if (instance.misconfigured() || instance.store.injected() != null) {
            if (fault == BatchFault.STORE_ERROR_AT_RELEASE
                    && probe.failure != null
                    && thrown != probe.failure
                    && !(thrown instanceof BatchFailedException b
                            && probe.failure instanceof BatchFailedException p
                            && b.index() == p.index()
                            && b.getCause() == p.getCause())) {
                fail("the handler's failure was not propagated unchanged: " + outcome);
            }
            Set<String> failedCall = instance.misconfigured() ? new HashSet<>(keys) : instance.store.failedIds();
            for (String k : keys) {
                loose.put(
                        k,
                        failedCall.contains(k)
                                ? EnumSet.allOf(KeyState.class)
                                : probe.ran.contains(k)
                                        ? EnumSet.of(KeyState.COMPLETED, KeyState.FREE)
                                        : EnumSet.of(before.get(k)));
            }
            if (ackable) {
                ackBatch(keys, thrown, outcome);
            }
            return thrown;
        }

        if (!transactional) {
            checkGivenBackUnrun(rowsBefore, "behind the stop of a batch (" + describe(result, thrown) + ")");
        }
        int failAt = fault == BatchFault.NACK ? -1 : step.failAt();
        boolean fails = run.contains(failAt);
        boolean joined = outer != null && outer.joined;
        if (joined && transactional && !probe.calls.isEmpty()) {
            // The claims of the first pass stay in the listener's transaction until it ends.
            run.forEach(i -> setState(keys.get(i), KeyState.COMPLETED));
        }
        List<Integer> firstCall = run;
        if (run.isEmpty()) {
            expect(probe.calls.isEmpty(), "no handler call (nothing to run)", outcome);
        } else if (probe.calls.isEmpty() || !probe.calls.get(0).equals(firstCall)) {
            fail("expected the handler to be called with " + firstCall + " (keys " + keys + ", states " + before
                    + "), got " + outcome);
        }
        if (fails) {
            List<Integer> done = run.stream().filter(i -> i < failAt).toList();
            BatchFailedException handlerFailure = (BatchFailedException) probe.failure;
            if (transactional) {
                if (joined) {
                    expectBatchFailure(
                            thrown, 0, handlerFailure.getCause(), "joined: nothing of the batch can commit", outcome);
                    return thrown;
                }
                // Rolled back, then the messages before the failing one run again in a new transaction.
                if (!done.isEmpty()
                        && (probe.calls.size() != 2 || !probe.calls.get(1).equals(done))) {
                    fail("expected the handler to run again for " + done + " alone, got " + outcome);
                }
                expectBatchFailure(thrown, failAt, handlerFailure.getCause(), "the failing message", outcome);
            } else {
                if (fault == BatchFault.CRASH_AT_COMPLETE && !done.isEmpty()) {
                    expect(thrown instanceof Crash, "the crash while completing " + done, outcome);
                    run.forEach(i -> setState(keys.get(i), KeyState.HELD));
                    return thrown;
                }
                expect(thrown == handlerFailure, "the handler's BatchFailedException, unchanged", outcome);
            }
            done.forEach(i -> setState(keys.get(i), KeyState.COMPLETED));
            if (ackable) {
                ackBatch(keys, thrown, outcome);
            }
            return thrown;
        }
        if (!run.isEmpty()) {
            switch (fault) {
                case FAIL_WHOLE -> {
                    expect(
                            thrown != null && thrown == probe.failure,
                            "the handler's own exception, unchanged",
                            outcome);
                    return thrown;
                }
                case ROLLBACK_ONLY -> {
                    if (transactional && !joined) {
                        expect(
                                thrown instanceof UnexpectedRollbackException,
                                "UnexpectedRollbackException (not acked)",
                                outcome);
                        return thrown;
                    }
                }
                case CRASH_IN_HANDLER -> {
                    expect(thrown instanceof Crash, "the crash", outcome);
                    if (!transactional) {
                        run.forEach(i -> setState(keys.get(i), KeyState.HELD));
                    }
                    return thrown;
                }
                case CRASH_AT_COMPLETE -> {
                    if (!transactional) {
                        expect(thrown instanceof Crash, "the crash", outcome);
                        run.forEach(i -> setState(keys.get(i), KeyState.HELD));
                        return thrown;
                    }
                }
                case NACK -> {
                    nackedBatch(keys, step, run, stop, joined, result, thrown, probe, outcome);
                    return thrown;
                }
                default -> {}
            }
        }
        if (stop < keys.size()) {
            expect(
                    thrown instanceof BatchFailedException b
                            && b.index() == (joined ? 0 : stop)
                            && b.getCause() instanceof MessageBusyException,
                    "BatchFailedException at index " + (joined ? 0 : stop) + " caused by BUSY",
                    outcome);
            if (joined) {
                return thrown;
            }
        } else {
            int duplicates = keys.size() - run.size();
            expect(
                    thrown == null && result.processed() == run.size() && result.duplicates() == duplicates,
                    "BatchResult[processed=" + run.size() + ", duplicates=" + duplicates + "]",
                    outcome);
        }
        run.forEach(i -> setState(keys.get(i), KeyState.COMPLETED));
        if (ackable) {
            ackBatch(keys, thrown, outcome);
        }
        return thrown;
    }

    private void batchHandler(Instance instance, List<String> keys, Batch step, List<Integer> indexes, Probe probe)
            throws NotDoneSignal {
        boolean firstCall = probe.calls.isEmpty();
        probe.calls.add(List.copyOf(indexes));
        boolean nacks = step.fault() == BatchFault.NACK && firstCall;
        for (int index : indexes) {
            if (nacks && index >= step.nackIndex()) {
                break; // the listener nacks from there: what follows it is not processed
            }
            if (index == step.failAt() && step.fault() != BatchFault.NACK) {
                throw probe.fail(new BatchFailedException(
                        index,
                        new HandlerFailure("message " + index + " (" + keys.get(index) + ") of the batch fails")));
            }
            probe.ran.add(keys.get(index));
            effect(keys.get(index));
        }
        if (!firstCall) {
            return; // the end-of-batch faults happen once
        }
        switch (step.fault()) {
            case FAIL_WHOLE -> throw probe.fail(new HandlerFailure("the batch handler fails"));
            case ROLLBACK_ONLY -> markRollbackOnly(probe);
            case CRASH_IN_HANDLER -> throw instance.store.die("in the batch handler");
            // What a binder's body does after a batch listener that nacked from an index returned.
            case NACK -> throw NotDoneSignal.from(step.nackIndex());
            default -> {}
        }
    }

    /**
     * A batch whose handler nacked from {@link Batch#nackIndex()} ({@link BatchFault#NACK}): the
     * messages run before it are COMPLETED and acked, the ones from it on are not done; the
     * redelivery runs them. Transactional mode rolls the nacking pass back and runs the messages
     * before the nack again in a pass of their own; joined to the listener's transaction, nothing
     * is done and that transaction cannot commit.
     */
    private void nackedBatch(
            List<String> keys,
            Batch step,
            List<Integer> run,
            int stop,
            boolean joined,
            @Nullable BatchResult result,
            @Nullable Throwable thrown,
            Probe probe,
            String outcome) {
        int nackAt = step.nackIndex();
        List<Integer> done = run.stream().filter(i -> i < nackAt).toList();
        boolean transactional = config.transactional();
        int notDoneFrom = joined ? 0 : Math.min(nackAt, stop);
        expect(
                thrown == null && result != null && result.notDoneFrom() == notDoneFrom,
                "BatchResult[notDoneFrom=" + notDoneFrom + "] (the handler nacked from " + nackAt + "; nothing thrown)",
                outcome);
        if (joined) {
            outer.doomed = true; // a nack marks the joined transaction rollback-only, as a failure does
            return;
        }
        if (transactional
                && !done.isEmpty()
                && (probe.calls.size() != 2 || !probe.calls.get(1).equals(done))) {
            fail("expected the handler to run again for " + done + " alone after its nack, got " + outcome);
        }
        expect(result.processed() == done.size(), "processed=" + done.size(), outcome);
        done.forEach(i -> setState(keys.get(i), KeyState.COMPLETED));
        run.stream()
                .filter(i -> i >= nackAt)
                .map(keys::get)
                .filter(k -> !done.stream().map(keys::get).toList().contains(k))
                .forEach(k -> setState(k, KeyState.FREE));
        for (int i = 0; i < notDoneFrom; i++) {
            ack(keys.get(i), "message " + i + " of a batch nacked from " + notDoneFrom);
        }
    }

    /** The ledger's rows of {@code keys}, as they are now. */
    private Map<String, Optional<ProcessedMessage>> rows(Set<String> keys) {
        Map<String, Optional<ProcessedMessage>> rows = new HashMap<>();
        keys.forEach(key -> rows.put(key, reader.find(consumer, key)));
        return rows;
    }

    /**
     * Claims given back without their handler running count no attempt and so can never make a
     * key uncertain: a row the claim created is gone, a row it took over has the status, attempts,
     * first claim and last error it had before ({@code rowsBefore}).
     */
    private void checkGivenBackUnrun(Map<String, Optional<ProcessedMessage>> rowsBefore, String where) {
        rowsBefore.forEach((key, was) -> {
            Optional<ProcessedMessage> now = reader.find(consumer, key);
            String what = key + " claimed and given back unrun " + where + ": ledger had "
                    + was.map(ExecutorModel::summary).orElse("no row") + ", has "
                    + now.map(ExecutorModel::summary).orElse("no row");
            if (was.isEmpty()) {
                expect(now.isEmpty(), "no row (the claim that created it gave it back unrun)", what);
            } else {
                expect(
                        now.isPresent()
                                && now.get().status() == was.get().status()
                                && now.get().attempts() == was.get().attempts()
                                && now.get().firstSeenAt().equals(was.get().firstSeenAt())
                                && java.util.Objects.equals(
                                        now.get().lastError(), was.get().lastError()),
                        "the row as it was (same status, attempts, first claim, last error)",
                        what);
            }
        });
    }

    private void expectBatchFailure(
            @Nullable Throwable thrown, int index, @Nullable Throwable cause, String what, String outcome) {
        expect(
                thrown instanceof BatchFailedException b && b.index() == index && b.getCause() == cause,
                "BatchFailedException at index " + index + " (" + what + ") with the handler's cause, unchanged",
                outcome);
    }

    /** Acks what a batch's outcome acks: all of it when it returned, the messages before the index when it stopped. */
    private void ackBatch(List<String> keys, @Nullable Throwable thrown, String outcome) {
        int acked = thrown == null ? keys.size() : thrown instanceof BatchFailedException b ? b.index() : 0;
        if (acked < 0 || acked > keys.size()) {
            fail("a batch of " + keys.size() + " stopped at index " + acked + ": " + outcome);
        }
        for (int i = 0; i < acked; i++) {
            ack(keys.get(i), "message " + i + " of a batch that " + outcome);
        }
    }

    /**
     * A poll claimed in one round trip ({@link Step.Poll}). Predicted from the model: a key FREE at
     * the claim runs once (its later copies in the poll are duplicates), a COMPLETED key is a
     * duplicate, a key another claim holds is BUSY and stops the poll; the failing record stops it
     * too (its claim released). At the "offset commit" the completions are written and the unrun
     * claims released, then the records before the stop are acked: {@link #ack} checks that each is
     * COMPLETED in the ledger, the promise the poll claim rests on.
     */
    private void poll(Step.Poll step) {
        Instance instance = instances[step.instance()];
        List<String> keys = step.keys().stream().map(ExecutorModel::key).toList();
        instance.store.clearInjected();
        Map<String, Optional<ProcessedMessage>> rowsBefore = rows(new TreeSet<>(keys));
        PollClaim claim = instance.executor.claimPoll(handler, messages(keys));
        if (config.transactional() || config.budgeted()) {
            expect(
                    claim == null,
                    "no poll claim (transactional mode, or a budget: records go one by one)",
                    String.valueOf(claim));
            return;
        }
        if (claim == null) {
            fail("expected a poll claim in lease mode");
            return;
        }
        keys.forEach(this::noteDelivered);
        Set<String> claimedHere = new HashSet<>();
        for (String key : keys) {
            if (stateOf(key) == KeyState.FREE && claimedHere.add(key)) {
                setState(key, KeyState.HELD);
            }
        }
        Set<String> ranHere = new HashSet<>();
        int stop = keys.size();
        for (int i = 0; i < keys.size(); i++) {
            String key = keys.get(i);
            int index = i;
            boolean failing = i == step.failAt();
            Probe probe = new Probe();
            HandlerResult<?> result = null;
            Throwable thrown = null;
            try {
                result = claim.execute(i, () -> {
                    probe.calls.add(List.of(index));
                    if (failing && step.nack()) {
                        // The listener made its effect and nacked: what the binder's body then throws.
                        effect(key);
                        throw NotDoneSignal.of(null);
                    }
                    if (failing) {
                        throw probe.fail(new HandlerFailure("record " + index + " (" + key + ") of the poll fails"));
                    }
                    probe.ran.add(key);
                    effect(key);
                    return null;
                });
            } catch (Throwable ex) {
                thrown = ex;
            }
            String outcome = describe(result, thrown) + " for record " + i + " (" + key + ") of the poll";
            boolean ran = !probe.calls.isEmpty();
            if (ranHere.contains(key) || stateOf(key) == KeyState.COMPLETED) {
                expect(
                        thrown == null && result != null && result.outcome() == MessageOutcome.DUPLICATE && !ran,
                        "DUPLICATE (completed, or run earlier in this poll)",
                        outcome);
                continue;
            }
            if (!claimedHere.contains(key)) {
                expect(
                        thrown instanceof MessageBusyException && !ran,
                        "BUSY (a live lease elsewhere holds it)",
                        outcome);
                // Before it waited for the holder, the poll wrote the completions it kept: the
                // records that ran before this one are completed even if the JVM dies now.
                ranHere.forEach(ran1 -> setState(ran1, KeyState.COMPLETED));
                // And, BUSY, it gave back the claims of the records after it at once, unrun.
                claimedHere.stream()
                        .filter(unrun -> !ranHere.contains(unrun))
                        .forEach(unrun -> setState(unrun, KeyState.FREE));
                stop = i;
                break;
            }
            if (failing && step.nack()) {
                expect(
                        thrown == null && result != null && result.outcome() == MessageOutcome.NOT_DONE && ran,
                        "NOT_DONE (the record nacked: its claim released, the poll stops there)",
                        outcome);
                claimedHere.remove(key);
                setState(key, KeyState.FREE);
                stop = i;
                break;
            }
            if (failing) {
                expect(thrown != null && thrown == probe.failure, "the handler's own exception, unchanged", outcome);
                claimedHere.remove(key);
                setState(key, KeyState.FREE);
                stop = i;
                break;
            }
            expect(
                    thrown == null && result != null && result.outcome() == MessageOutcome.PROCESSED && ran,
                    "PROCESSED (claimed by the poll)",
                    outcome);
            ranHere.add(key);
        }
        if (step.crashBeforeCommit()) {
            // The JVM dies: no completion written, no claim released, nothing acked. The claims
            // stay HELD until their lease ends; the records come again.
            instance.restart = true;
            return;
        }
        claim.completePending();
        claim.releaseUnrun();
        for (String key : claimedHere) {
            setState(key, ranHere.contains(key) ? KeyState.COMPLETED : KeyState.FREE);
        }
        Map<String, Optional<ProcessedMessage>> givenBack = new HashMap<>();
        claimedHere.stream()
                .filter(key -> !ranHere.contains(key))
                .forEach(key -> givenBack.put(key, rowsBefore.get(key)));
        checkGivenBackUnrun(givenBack, "behind the stop of a poll, at its offset commit");
        for (int i = 0; i < stop; i++) {
            ack(keys.get(i), "record " + i + " of a poll, acked at the offset commit");
        }
    }

    /**
     * Claims given back without the handler running ({@link Step.Unrun}): they must count no
     * attempt and never make a key uncertain. The ledger's rows of the keys are compared before and
     * after the give-backs; then every key that had no row before is delivered to a handler of the
     * same namespace whose reconcile-after window is 1 ms, which holds any take-over for
     * reconciliation: it must run (a first claim), never RECONCILE.
     */
    private void unrun(Step.Unrun step) {
        Instance instance = instances[step.instance()];
        List<String> keys = step.keys().stream().map(ExecutorModel::key).toList();
        Set<String> distinct = new TreeSet<>(keys);
        instance.store.clearInjected();
        Map<String, Optional<ProcessedMessage>> before = new HashMap<>();
        distinct.forEach(key -> before.put(key, reader.find(consumer, key)));
        for (int round = 0; round < step.rounds(); round++) {
            PollClaim claim = instance.executor.claimPoll(handler, messages(keys));
            if (config.transactional() || config.budgeted()) {
                expect(claim == null, "no poll claim (transactional mode, or a budget)", String.valueOf(claim));
                return;
            }
            if (claim == null) {
                fail("expected a poll claim in lease mode");
                return;
            }
            keys.forEach(this::noteDelivered); // fetched, not acked: the broker delivers them again
            claim.completePending(); // nothing ran: nothing to complete
            claim.releaseUnrun();
        }
        checkGivenBackUnrun(before, "by " + step.rounds() + " poll(s)");
        // Never uncertain: a key first claimed by the give-backs alone runs as a first claim, even
        // with a window that holds every take-over for reconciliation.
        HandlerDefinition strict = HandlerDefinition.builder(consumer)
                .mode(config.mode())
                .lease(LEASE)
                .reconcileAfter(Duration.ofMillis(1))
                .build();
        for (String key : distinct) {
            if (before.get(key).isPresent() || stateOf(key) != KeyState.FREE) {
                continue;
            }
            Probe probe = new Probe();
            HandlerResult<?> result = null;
            Throwable thrown = null;
            try {
                result = instance.executor.execute(strict, message(key), () -> {
                    probe.calls.add(List.of(0));
                    effect(key);
                    return key;
                });
            } catch (Throwable ex) {
                thrown = ex;
            }
            String outcome = describe(result, thrown) + " for " + key
                    + " after its claims were given back unrun, under a 1 ms reconcile-after window";
            expect(
                    thrown == null && result != null && result.outcome() == MessageOutcome.PROCESSED,
                    "PROCESSED (never claimed by a run: a first claim, not an uncertain take-over)",
                    outcome);
            if (thrown == null) {
                setState(key, KeyState.COMPLETED);
                ack(key, "PROCESSED after claims given back unrun");
            }
        }
    }

    /** A reused key with another payload, to a handler that rejects it ({@link Step.Reused}). */
    private void reused(Step.Reused step) {
        String key = key(step.key());
        KeyState before = stateOf(key);
        Optional<ProcessedMessage> row = reader.find(consumer, key);
        boolean claimable =
                before == KeyState.FREE && row.isPresent() && row.get().status() == MessageStatus.IN_PROGRESS;
        if (config.transactional() || !(claimable || before == KeyState.HELD)) {
            history.add("  (nothing to refuse: no row free to claim, no live lease)");
            return;
        }
        Instance instance = instances[step.instance()];
        instance.store.clearInjected();
        HandlerDefinition rejecting = HandlerDefinition.builder(consumer)
                .mode(config.mode())
                .lease(LEASE)
                .fingerprintPolicy(FingerprintMismatchPolicy.REJECT)
                .build();
        InboundMessage other =
                InboundMessage.of("another payload of " + key, Map.of(HandlerDefinition.IDEMPOTENCY_KEY_HEADER, key));
        AtomicInteger calls = new AtomicInteger();
        Object result = null;
        Throwable thrown = null;
        try {
            result = step.async()
                    ? instance.executor.executeAsync(rejecting, other, () -> {
                        calls.incrementAndGet();
                        return CompletableFuture.completedFuture(key);
                    })
                    : instance.executor.execute(rejecting, other, () -> {
                        calls.incrementAndGet();
                        return key;
                    });
        } catch (Throwable ex) {
            thrown = ex;
        }
        String outcome = describe(result, thrown) + " for " + key + " with another payload";
        if (before == KeyState.HELD) {
            expect(
                    thrown instanceof MessageBusyException && calls.get() == 0,
                    "BUSY (a live lease holds the key)",
                    outcome);
            return;
        }
        expect(
                thrown instanceof FingerprintMismatchException && calls.get() == 0,
                "FingerprintMismatchException before the handler runs",
                outcome);
        checkGivenBackUnrun(Map.of(key, row), "after its fingerprint was rejected");
    }

    private static String summary(ProcessedMessage row) {
        return row.status() + " attempts " + row.attempts() + " first seen " + row.firstSeenAt() + " last error "
                + row.lastError();
    }

    /** The same key at the same moment on {@code copies} instances, each on a thread of its own. */
    private void concurrently(Concurrently step) {
        String key = key(step.key());
        noteDelivered(key);
        KeyState before = stateOf(key);
        boolean transactional = config.transactional();
        boolean predictable = true;
        for (int i = 0; i < step.copies(); i++) {
            predictable &= !instances[i].misconfigured();
        }
        CountDownLatch start = new CountDownLatch(1);
        // Lease mode: the claimant finishes only after the other copies got their answer, so they
        // all meet its live claim (transactional copies wait on the row lock instead).
        CountDownLatch others = new CountDownLatch(step.copies() - 1);
        AtomicInteger runs = new AtomicInteger();
        AtomicReference<Boolean> waitedInVain = new AtomicReference<>(false);
        List<Future<Object>> futures = new ArrayList<>();
        for (int i = 0; i < step.copies(); i++) {
            Instance instance = instances[i];
            futures.add(THREADS.submit(() -> {
                boolean[] ran = {false};
                try {
                    start.await();
                    return instance.executor.execute(handler, message(key), () -> {
                        ran[0] = true;
                        runs.incrementAndGet();
                        checkNotCompletedBefore(key);
                        effect(key);
                        if (!transactional && !others.await(5, TimeUnit.SECONDS)) {
                            waitedInVain.set(true);
                        }
                        return key;
                    });
                } catch (Throwable ex) {
                    return ex;
                } finally {
                    if (!ran[0]) {
                        others.countDown();
                    }
                }
            }));
        }
        start.countDown();
        List<Object> outcomes = new ArrayList<>();
        for (Future<Object> future : futures) {
            try {
                outcomes.add(future.get(60, TimeUnit.SECONDS));
            } catch (Exception ex) {
                fail("a concurrent delivery did not finish: " + ex);
            }
        }
        int processed = 0;
        int duplicates = 0;
        int busy = 0;
        int lockFailures = 0;
        for (Object outcome : outcomes) {
            if (outcome instanceof HandlerResult<?> r && r.outcome() == MessageOutcome.PROCESSED) {
                processed++;
            } else if (outcome instanceof HandlerResult<?> r && r.outcome() == MessageOutcome.DUPLICATE) {
                duplicates++;
            } else if (outcome instanceof MessageBusyException) {
                busy++;
            } else if (transactional && outcome instanceof TransientDataAccessException) {
                lockFailures++; // a deadlock or lock timeout: not acked, the broker redelivers
            } else if (!predictable && outcome instanceof Exception) {
                // The misconfigured instance may refuse; not acked.
            } else {
                fail("unexpected outcome of a concurrent delivery: " + describe(null, (Throwable) outcome) + " (all: "
                        + outcomes + ")");
            }
        }
        String all = "PROCESSED " + processed + ", DUPLICATE " + duplicates + ", BUSY " + busy + ", lock failures "
                + lockFailures;
        if (processed > 1 || runs.get() > 1 && !transactional) {
            fail("the handler ran " + runs.get() + " times for " + step.copies() + " concurrent copies of " + key + ": "
                    + all);
        }
        if (!predictable) {
            loose.put(key, EnumSet.allOf(KeyState.class));
        } else if (before == KeyState.COMPLETED) {
            expect(duplicates == step.copies(), "all DUPLICATE", all);
        } else if (before == KeyState.HELD) {
            expect(busy == step.copies(), "all BUSY", all);
        } else if (transactional) {
            expect(
                    processed == 1 && duplicates + lockFailures == step.copies() - 1
                            || processed == 0 && lockFailures == step.copies(),
                    "one PROCESSED, the others DUPLICATE",
                    all);
        } else {
            expect(
                    processed == 1
                            && (busy == step.copies() - 1
                                    || waitedInVain.get() && busy + duplicates == step.copies() - 1),
                    "one PROCESSED, the others BUSY",
                    all);
        }
        if (processed == 1) {
            setState(key, KeyState.COMPLETED);
        }
        if (processed + duplicates > 0) {
            ack(key, "concurrent delivery (" + all + ")");
        }
    }

    /**
     * Two overlapping batches at once on two live instances, no faults: the outcome of each is not
     * predicted (who claims what first is a race), but every message runs at most once, acks only
     * what is COMPLETED, and no claim stays leased afterwards.
     */
    private void concurrentBatches(ConcurrentBatches step) {
        List<List<String>> batches = List.of(
                step.first().stream().map(ExecutorModel::key).toList(),
                step.second().stream().map(ExecutorModel::key).toList());
        Map<String, KeyState> before = new HashMap<>();
        batches.forEach(keys -> keys.forEach(k -> {
            noteDelivered(k);
            before.put(k, stateOf(k));
        }));
        boolean predictable = !instances[0].misconfigured() && !instances[1].misconfigured();
        Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
        CountDownLatch start = new CountDownLatch(1);
        List<Future<Object>> futures = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            Instance instance = instances[i];
            List<String> keys = batches.get(i);
            futures.add(THREADS.submit(() -> {
                try {
                    start.await();
                    return instance.executor.executeBatch(handler, messages(keys), indexes -> {
                        for (int index : indexes) {
                            runs.computeIfAbsent(keys.get(index), k -> new AtomicInteger())
                                    .incrementAndGet();
                            effect(keys.get(index));
                        }
                    });
                } catch (Throwable ex) {
                    return ex;
                }
            }));
        }
        start.countDown();
        List<Object> outcomes = new ArrayList<>();
        for (Future<Object> future : futures) {
            try {
                outcomes.add(future.get(60, TimeUnit.SECONDS));
            } catch (Exception ex) {
                fail("a concurrent batch did not finish: " + ex);
            }
        }
        String all = outcomes.stream()
                .map(o -> o instanceof Throwable t ? describe(null, t) : String.valueOf(o))
                .toList()
                .toString();
        for (int i = 0; i < 2; i++) {
            Object outcome = outcomes.get(i);
            List<String> keys = batches.get(i);
            boolean expected = outcome instanceof BatchResult
                    || outcome instanceof BatchFailedException b
                            && (b.getCause() instanceof MessageBusyException
                                    || b.getCause() instanceof TransientDataAccessException)
                    || outcome instanceof TransientDataAccessException && config.transactional();
            if (!expected && predictable) {
                fail("unexpected outcome of concurrent batches: " + all);
            }
            ackBatch(keys, outcome instanceof Throwable t ? t : null, all);
        }
        for (Map.Entry<String, AtomicInteger> run : runs.entrySet()) {
            if (!config.transactional() && predictable && run.getValue().get() > 1) {
                fail("lease mode ran " + run.getKey() + " " + run.getValue().get()
                        + " times in two concurrent batches: " + all);
            }
        }
        before.forEach((k, s) -> loose.put(
                k,
                !predictable
                        ? EnumSet.allOf(KeyState.class)
                        : s == KeyState.FREE ? EnumSet.of(KeyState.FREE, KeyState.COMPLETED) : EnumSet.of(s)));
    }

    /** A lease-mode handler that outlives its lease while another instance takes the message over. */
    private void overtaken(Overtaken step) {
        String key = key(step.key());
        if (config.transactional() || stateOf(key) != KeyState.FREE) {
            deliver(new Deliver(step.instance(), step.key(), Fault.NONE));
            return;
        }
        noteDelivered(key);
        Instance slow = instances[step.instance()];
        int other = (step.instance() + 1) % INSTANCES;
        AtomicInteger calls = new AtomicInteger();
        HandlerResult<?> result = null;
        Throwable thrown = null;
        try {
            result = slow.executor.execute(handler, message(key), () -> {
                calls.incrementAndGet();
                effect(key);
                // The JVM freezes: its lease renewal stops with it, and the lease runs out.
                slow.store.freeze(true);
                expireLeases();
                history.add("  while the handler of instance " + step.instance() + " runs, its lease expires and: "
                        + new Deliver(other, step.key(), step.otherFault()));
                Future<Throwable> overtaking =
                        THREADS.submit(() -> deliver(new Deliver(other, step.key(), step.otherFault())));
                overtaking.get(60, TimeUnit.SECONDS);
                slow.store.freeze(false);
                return key;
            });
        } catch (Throwable ex) {
            thrown = ex;
        }
        String outcome = describe(result, thrown);
        if (thrown instanceof AssertionError assertion) {
            throw assertion;
        }
        if (thrown instanceof java.util.concurrent.ExecutionException execution
                && execution.getCause() instanceof AssertionError assertion) {
            throw assertion;
        }
        if (calls.get() != 1) {
            fail("expected the slow handler to run once, it ran " + calls.get() + " times: " + outcome);
        }
        if (ledgerState(key) == KeyState.COMPLETED) {
            // The taker completed it (or never claimed it, and the slow run completed its own
            // claim): the slow run did happen, so it is reported (a lost lease is counted).
            expect(
                    thrown == null && result.outcome() == MessageOutcome.PROCESSED,
                    "PROCESSED (the message is COMPLETED)",
                    outcome);
            setState(key, KeyState.COMPLETED);
            ack(key, "PROCESSED after its lease was lost");
        } else {
            // The taker failed, died or is still running: the slow run must not be acked, its
            // message must come again (BUSY while the taker's lease lives).
            expect(
                    thrown instanceof MessageBusyException,
                    "MessageBusyException (the lease was lost and the message is not COMPLETED)",
                    outcome);
        }
    }

    private void outer(Outer step) {
        Instance instance = instances[step.instance()];
        boolean joined = step.kind() == TransactionKind.LEDGER && config.transactional();
        OuterScope scope = new OuterScope(joined);
        outer = scope;
        PlatformTransactionManager manager =
                step.kind() == TransactionKind.LEDGER ? ledgerTransactions : foreignTransactions();
        boolean committed;
        try {
            new TransactionTemplate(manager).executeWithoutResult(status -> {
                for (Step inner : step.steps()) {
                    history.add("  in " + step.kind() + " transaction: " + inner);
                    Throwable thrown;
                    if (inner instanceof Deliver deliver) {
                        thrown = deliver(new Deliver(instance.id, deliver.key(), deliver.fault()));
                    } else if (inner instanceof Batch batch) {
                        thrown = batch(new Batch(instance.id, batch.keys(), batch.failAt(), batch.fault()));
                    } else {
                        throw new IllegalArgumentException("not inside a transaction: " + inner);
                    }
                    if (thrown != null && !step.catchFailures()) {
                        throw new GroupFailed(thrown);
                    }
                    // A caught failure: the listener dead-letters that message; the others are acked with the commit.
                }
                if (step.rollback()) {
                    status.setRollbackOnly();
                }
            });
            committed = !step.rollback();
        } catch (GroupFailed failed) {
            committed = false;
        } catch (UnexpectedRollbackException ex) {
            if (!scope.doomed) {
                fail("the listener's transaction was rolled back unexpectedly: " + ex);
            }
            committed = false;
        }
        outer = null;
        if (committed && scope.doomed) {
            fail("the listener's transaction committed although a delivery that joined it failed");
        }
        if (committed) {
            state.putAll(scope.overlay);
            scope.acks.forEach(key -> ack(key, "after the listener's transaction committed"));
        }
    }

    /** Carries a delivery's exception out of the listener's transaction, rolling it back. */
    private static final class GroupFailed extends RuntimeException {
        GroupFailed(Throwable cause) {
            super(cause);
        }
    }

    private void finish() {
        while (!pendingAsync.isEmpty()) {
            top(new Step.AsyncEnd(null)); // the futures still pending complete
        }
        history.add("-- finally, every undone key is delivered again until it is acked --");
        loose.clear();
        // First without expiring anything: a released claim must be claimable at once.
        for (String key : List.copyOf(pending)) {
            top(new Deliver(0, index(key), Fault.NONE));
        }
        for (int round = 0; round < 3 && !pending.isEmpty(); round++) {
            top(new ExpireLeases());
            for (String key : List.copyOf(pending)) {
                top(new Deliver(0, index(key), Fault.NONE));
            }
        }
        if (!pending.isEmpty()) {
            fail("never acked although delivered again after its lease expired: " + pending);
        }
        for (String key : delivered) {
            if (state.get(key) != KeyState.COMPLETED) {
                fail(key + " is acked but not COMPLETED at the end");
            }
            if (config.transactional()) {
                int effects = effectRows(key);
                if (effects != 1) {
                    fail("transactional mode committed the effect of " + key + " " + effects
                            + " times (expected exactly once)");
                }
            } else if (runs(key) < 1) {
                fail("lease mode never ran the handler of " + key);
            }
        }
        if (config.transactional()) {
            Integer total = jdbc.queryForObject(
                    "SELECT COUNT(*) FROM " + EFFECTS + " WHERE consumer = ?", Integer.class, consumer);
            if (total == null || total != delivered.size()) {
                fail(total + " effect rows committed for " + delivered.size() + " delivered keys");
            }
        }
    }

    // ---------------------------------------------------------------- the model and its checks

    private KeyState stateOf(String key) {
        if (outer != null && outer.joined && outer.overlay.containsKey(key)) {
            return outer.overlay.get(key);
        }
        return state.get(key);
    }

    private void setState(String key, KeyState s) {
        if (outer != null && outer.joined) {
            outer.overlay.put(key, s);
        } else {
            state.put(key, s);
        }
    }

    private void noteDelivered(String key) {
        delivered.add(key);
        pending.add(key);
    }

    /**
     * The broker gets the ack for {@code key}: the ledger must say COMPLETED (and, in transactional
     * mode, exactly one effect row must be committed). Inside the listener's transaction the ack
     * waits for its commit.
     */
    private void ack(String key, String what) {
        if (outer != null) {
            outer.acks.add(key);
            return;
        }
        Optional<ProcessedMessage> row = reader.find(consumer, key);
        if (row.isEmpty() || !row.get().isCompleted()) {
            fail("acked " + key + " (" + what + ") but the ledger has "
                    + row.map(r -> r.status().toString()).orElse("no row"));
        }
        if (config.transactional()) {
            int effects = effectRows(key);
            if (effects != 1) {
                fail("acked " + key + " (" + what + ") with " + effects
                        + " committed effect rows (expected exactly one)");
            }
        }
        everCompleted.add(key);
        pending.remove(key);
    }

    /** After every step: the ledger agrees with the model (a live lease where the model says HELD, and so on). */
    private void verifyLedger() {
        Map<String, Integer> effects = new HashMap<>();
        if (config.transactional()) {
            jdbc.query(
                    "SELECT message_id, COUNT(*) FROM " + EFFECTS + " WHERE consumer = ? GROUP BY message_id",
                    rs -> {
                        effects.put(rs.getString(1), rs.getInt(2));
                    },
                    consumer);
        }
        for (int k = 0; k < KEYS; k++) {
            String key = key(k);
            KeyState actual = ledgerState(key);
            Set<KeyState> allowed = loose.getOrDefault(key, EnumSet.of(state.get(key)));
            if (!allowed.contains(actual)) {
                fail("the ledger has " + key + " " + actual + " but the model expects " + allowed
                        + explain(allowed, actual));
            }
            state.put(key, actual);
            if (actual == KeyState.COMPLETED) {
                everCompleted.add(key);
            }
            int committed = effects.getOrDefault(key, 0);
            if (config.transactional() && committed != (actual == KeyState.COMPLETED ? 1 : 0)) {
                fail(
                        "transactional mode: the ledger has " + key + " " + actual + " with " + committed
                                + " committed effect rows (a row is COMPLETED exactly when the handler's effect committed, once)");
            }
        }
        loose.clear();
    }

    private static String explain(Set<KeyState> allowed, KeyState actual) {
        if (actual == KeyState.HELD && allowed.contains(KeyState.FREE)) {
            return " (a claim stays leased although its holder released it, gave it back, or is gone and its lease expired:"
                    + " every redelivery is BUSY until the lease ends)";
        }
        if (actual == KeyState.COMPLETED) {
            return " (a row is COMPLETED although its handler's work was rolled back or never ran)";
        }
        return "";
    }

    /**
     * The ledger's view of a key. A lease counts as live when it ends more than half a lease from
     * now: fresh claims end a whole lease ahead, released and expired ones at or before now, so
     * the margin absorbs any difference between the database's clock and this JVM's.
     */
    private KeyState ledgerState(String key) {
        Optional<ProcessedMessage> row = reader.find(consumer, key);
        if (row.isEmpty()) {
            return KeyState.FREE;
        }
        if (row.get().status() == MessageStatus.COMPLETED) {
            return KeyState.COMPLETED;
        }
        if (row.get().status() != MessageStatus.IN_PROGRESS) {
            fail("unexpected ledger status " + row.get());
        }
        Instant leaseUntil = row.get().leaseUntil();
        return leaseUntil != null && leaseUntil.isAfter(Instant.now().plus(LEASE.dividedBy(2)))
                ? KeyState.HELD
                : KeyState.FREE;
    }

    private void effect(String key) {
        if (config.transactional()) {
            // The business row: in the handler's transaction, if the ledger's DataSource is in one.
            jdbc.update("INSERT INTO " + EFFECTS + " (consumer, message_id) VALUES (?, ?)", consumer, key);
        } else {
            checkNotCompletedBefore(key);
            leaseRuns.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
        }
    }

    private void checkNotCompletedBefore(String key) {
        if (!config.transactional() && everCompleted.contains(key)) {
            violations.add("lease mode ran the handler of " + key + " after it had been COMPLETED");
        }
    }

    private void markRollbackOnly(Probe probe) {
        if (TransactionSynchronizationManager.getResource(dataSource) instanceof ConnectionHolder holder) {
            holder.setRollbackOnly();
            probe.markedRollbackOnly = true;
        }
    }

    private int effectRows(String key) {
        Integer count = jdbc.queryForObject(
                "SELECT COUNT(*) FROM " + EFFECTS + " WHERE consumer = ? AND message_id = ?",
                Integer.class,
                consumer,
                key);
        return count == null ? 0 : count;
    }

    private int runs(String key) {
        AtomicInteger runs = leaseRuns.get(key);
        return runs == null ? 0 : runs.get();
    }

    private void expect(boolean ok, String expected, String actual) {
        if (!ok) {
            fail("expected " + expected + ", got " + actual);
        }
    }

    private void fail(String message) {
        throw new AssertionError(message + "\n  on " + ledger.name() + " with " + config + ", after:\n    "
                + String.join("\n    ", history));
    }

    private static String describe(@Nullable Object result, @Nullable Throwable thrown) {
        if (thrown == null) {
            return String.valueOf(result);
        }
        return thrown.getClass().getSimpleName() + "(" + thrown.getMessage() + ")"
                + (thrown.getCause() != null
                        ? " caused by " + thrown.getCause().getClass().getSimpleName()
                        : "");
    }

    static String key(int k) {
        return "k" + k;
    }

    private static int index(String key) {
        return Integer.parseInt(key.substring(1));
    }

    private static InboundMessage message(String key) {
        return InboundMessage.of("payload of " + key, Map.of(HandlerDefinition.IDEMPOTENCY_KEY_HEADER, key));
    }

    private static List<InboundMessage> messages(List<String> keys) {
        return keys.stream().map(ExecutorModel::message).toList();
    }

    /** A transaction manager of another database: its transactions do not include the ledger's DataSource. */
    private static DataSourceTransactionManager foreignTransactions() {
        DataSourceTransactionManager manager = foreign;
        if (manager == null) {
            synchronized (ExecutorModel.class) {
                manager = foreign;
                if (manager == null) {
                    DriverManagerDataSource other =
                            new DriverManagerDataSource("jdbc:h2:mem:sumi_model_foreign;DB_CLOSE_DELAY=-1", "sa", "");
                    manager = new DataSourceTransactionManager(other);
                    foreign = manager;
                }
            }
        }
        return manager;
    }
}
