package io.sumi.consumer.model;

import java.util.List;
import java.util.stream.Collectors;
import org.jspecify.annotations.Nullable;

/**
 * One action of a model sequence (see {@link ExecutorModel}). Each step prints as the Java call
 * that builds it, so a shrunk counterexample can be pasted into a regression test as it is.
 * Keys are small integers ({@code 0..}{@link ExecutorModel#KEYS}{@code -1}) so that duplicates
 * are frequent; instances are {@code 0..}{@link ExecutorModel#INSTANCES}{@code -1}.
 */
sealed interface Step {

    /** What goes wrong during one record delivery. */
    enum Fault {
        /** Nothing: the handler runs, the message is acked. */
        NONE,
        /** The handler throws before its effect. */
        FAIL_BEFORE_EFFECT,
        /** The handler throws (unchecked) after its effect. */
        FAIL_AFTER_EFFECT,
        /** The handler throws a checked exception after its effect. */
        FAIL_CHECKED,
        /** Transactional: the handler marks the ledger's transaction rollback-only after its effect and returns. */
        ROLLBACK_ONLY,
        /** The JVM dies before the claim statement runs. */
        CRASH_BEFORE_CLAIM,
        /** The JVM dies inside the handler, after the effect (no release, no commit). */
        CRASH_IN_HANDLER,
        /** Lease mode: the JVM dies when it is about to mark the claim COMPLETED (after the effect). */
        CRASH_AT_COMPLETE,
        /** The executor returns, then the JVM dies before the broker gets the ack: delivered again later. */
        CRASH_BEFORE_ACK,
        /** Lease mode: the ledger call that marks the claim COMPLETED fails once (the instance lives on). */
        STORE_ERROR_AT_COMPLETE,
        /** Lease mode: the handler fails after its effect and the release of its claim fails once. */
        STORE_ERROR_AT_RELEASE,
        /**
         * The handler makes its effect, nacks the message and returns (the binder's body then throws
         * {@code NotDoneSignal}): the executor returns {@code NOT_DONE}, the row is not COMPLETED
         * (released, or rolled back with the effect), nothing is acked, the redelivery runs it.
         */
        NACK
    }

    /** What goes wrong during one batch delivery (besides {@code failAt}). */
    enum BatchFault {
        NONE,
        /** The handler throws an ordinary exception after its effects: the whole batch fails. */
        FAIL_WHOLE,
        /** Transactional: the handler marks the transaction rollback-only after its effects. */
        ROLLBACK_ONLY,
        CRASH_IN_HANDLER,
        CRASH_AT_COMPLETE,
        CRASH_BEFORE_ACK,
        /** Lease mode: the first {@code completeAll} of the batch fails once. */
        STORE_ERROR_AT_COMPLETE,
        /** Lease mode: the first {@code releaseAll} of the batch fails once. */
        STORE_ERROR_AT_RELEASE,
        /** Lease mode: every {@code completeAll} of the batch fails (the database is unreachable for it; retries fail too). */
        STORE_DOWN_AT_COMPLETE,
        /**
         * The handler makes the effects of the messages it was given before {@link Batch#nackIndex()}
         * (the middle of the batch; {@code failAt} plays no part), nacks from there and returns (the
         * binder's body throws {@code NotDoneSignal.from}): the executor returns
         * {@code BatchResult.notDoneFrom} at that index (or at an earlier stop); the messages before
         * it are done and acked, it and the ones after are not COMPLETED (released, or rolled back),
         * and their redelivery runs them.
         */
        NACK
    }

    /** Whose transaction an {@link Outer} step opens around its deliveries. */
    enum TransactionKind {
        /** A transaction of the ledger's own DataSource: the executor joins it. */
        LEDGER,
        /** A transaction of another resource (like a Kafka transaction): the ledger's DataSource takes no part. */
        FOREIGN
    }

    /** One record delivery of {@code key} to {@code instance}. */
    record Deliver(int instance, int key, Fault fault) implements Step {
        @Override
        public String toString() {
            return "deliver(" + instance + ", " + key + ", " + fault + ")";
        }
    }

    /**
     * Issue 19: one record delivery of {@code key} to {@code instance} whose handler is
     * asynchronous ({@code IdempotentExecutor.executeAsync}): it returns a future that completes
     * later, on another thread, after the executor has returned, successfully (after the effect)
     * or exceptionally (before it). The row must follow the future: held while it runs, COMPLETED
     * when it succeeds, released when it fails. (Where the executor waits for the future itself,
     * transactional mode or a budgeted handler, the future completes inside the handler.)
     */
    record AsyncDeliver(int instance, int key, boolean succeeds) implements Step {
        @Override
        public String toString() {
            return "asyncDeliver(" + instance + ", " + key + ", " + succeeds + ")";
        }
    }

    /**
     * Issue 19: like {@link AsyncDeliver}, but the handler's future stays pending after the step:
     * its work has begun (the effect is made when the handler is called), and it completes, {@code
     * succeeds} or exceptionally, only at a later {@link AsyncEnd} (or at the end of the sequence),
     * so that other steps interleave with it: the key is BUSY meanwhile, its lease may be expired
     * and the message taken over by another instance (or given back unrun, or pruned), and the JVM
     * may die (then the future never completes and its claim lapses). When it completes, the row
     * follows it only while the claim is still its own (the claim token): a stale completion
     * changes nothing of the taker's row and is acked only if the taker completed the message, and
     * a stale failure releases nothing. Where the executor waits for the future itself
     * (transactional mode, a budgeted handler) this is an {@link AsyncDeliver}.
     */
    record AsyncStart(int instance, int key, boolean succeeds) implements Step {
        @Override
        public String toString() {
            return "asyncStart(" + instance + ", " + key + ", " + succeeds + ")";
        }
    }

    /**
     * The oldest pending future of an {@link AsyncStart} completes (on another thread); nothing if
     * none is pending. {@code takerFault} not {@code null}: first its lease lapses and the next
     * instance takes the message over, with that fault, while the future is still pending.
     */
    record AsyncEnd(@Nullable Fault takerFault) implements Step {
        @Override
        public String toString() {
            return "asyncEnd(" + (takerFault == null ? "null" : takerFault) + ")";
        }
    }

    /**
     * One batch delivery to {@code instance}. The handler processes the indexes it is given in
     * order and throws {@code BatchFailedException(failAt)} when it reaches {@code failAt}
     * (before that message's effect); {@code -1}: no message fails.
     */
    record Batch(int instance, List<Integer> keys, int failAt, BatchFault fault) implements Step {
        public Batch {
            keys = List.copyOf(keys);
        }

        /** Where a {@link BatchFault#NACK} handler nacks from: the middle of the batch. */
        int nackIndex() {
            return keys.size() / 2;
        }

        @Override
        public String toString() {
            return "batch(" + instance + ", List.of("
                    + keys.stream().map(String::valueOf).collect(Collectors.joining(", ")) + "), " + failAt + ", "
                    + fault + ")";
        }
    }

    /**
     * Lease mode, the poll-level claim: the records of {@code keys} fetched by one poll of
     * {@code instance}, claimed in one round trip ({@code claimPoll}) and run one by one against
     * their claims; the record at {@code failAt} fails before its effect and stops the poll (the
     * container seeks back: the rest is not run now); then the completions are written and the
     * unrun claims released (the offset commit), and the records before the stop are acked.
     * {@code crashBeforeCommit}: the JVM dies after the records ran, before the completions are
     * written: nothing is acked. {@code nack}: the record at {@code failAt} makes its effect and
     * nacks instead of failing ({@code NOT_DONE}, its claim released, the poll stops there). The
     * claims of the records behind the stop are given back unrun: they count no attempt.
     */
    record Poll(int instance, List<Integer> keys, int failAt, boolean crashBeforeCommit, boolean nack) implements Step {
        public Poll {
            keys = List.copyOf(keys);
        }

        @Override
        public String toString() {
            return "poll(" + instance + ", List.of("
                    + keys.stream().map(String::valueOf).collect(Collectors.joining(", ")) + "), " + failAt + ", "
                    + crashBeforeCommit + ", " + nack + ")";
        }
    }

    /**
     * Lease mode, claims released without the handler running: {@code rounds} times, a poll of
     * {@code instance} claims {@code keys} and gives every claim back unrun (the container sought
     * back behind a busy or failing record, a filter dropped them, a pause, a stop). Checked: the
     * give-backs count no attempt (a row the claims created is gone, a row they took over has the
     * attempts, first claim and last error it had), and a key that had no row before is then run
     * even by a handler whose reconcile-after window is 1 ms: it is never held for reconciliation.
     */
    record Unrun(int instance, List<Integer> keys, int rounds) implements Step {
        public Unrun {
            keys = List.copyOf(keys);
        }

        @Override
        public String toString() {
            return "unrun(" + instance + ", List.of("
                    + keys.stream().map(String::valueOf).collect(Collectors.joining(", ")) + "), " + rounds + ")";
        }
    }

    /**
     * Lease mode: {@code key} delivered to {@code instance} with another payload (a producer reused
     * the key) to a handler of the same namespace that rejects a reused key
     * ({@code FingerprintMismatchPolicy.REJECT}), record by record or {@code async}. Where the key
     * has a row that is free to claim (released, or its lease ended), the claim sees the other
     * fingerprint and is refused before the handler runs: given back unrun, it counts no attempt
     * (the row as it was). A key held by a live lease is BUSY; otherwise nothing is delivered.
     */
    record Reused(int instance, int key, boolean async) implements Step {
        @Override
        public String toString() {
            return "reused(" + instance + ", " + key + ", " + async + ")";
        }
    }

    /** {@code key} delivered at the same moment to instances {@code 0..copies-1}, each on a thread of its own. */
    record Concurrently(int key, int copies) implements Step {
        @Override
        public String toString() {
            return "concurrently(" + key + ", " + copies + ")";
        }
    }

    /** Two batches delivered at the same moment, {@code first} to instance 0 and {@code second} to instance 1, on threads of their own. */
    record ConcurrentBatches(List<Integer> first, List<Integer> second) implements Step {
        public ConcurrentBatches {
            first = List.copyOf(first);
            second = List.copyOf(second);
        }

        @Override
        public String toString() {
            return "concurrentBatches(List.of("
                    + first.stream().map(String::valueOf).collect(Collectors.joining(", ")) + "), List.of("
                    + second.stream().map(String::valueOf).collect(Collectors.joining(", ")) + "))";
        }
    }

    /**
     * Lease mode: the handler on {@code instance} outlives its lease because its JVM freezes (a
     * long GC pause), which stops its lease renewal too: while it runs, the lease expires and the
     * next instance receives the message with {@code otherFault}; then the slow handler returns.
     * (A live JVM renews its lease: see {@code LeaseRenewalIntegrationTests}.)
     */
    record Overtaken(int instance, int key, Fault otherFault) implements Step {
        @Override
        public String toString() {
            return "overtaken(" + instance + ", " + key + ", " + otherFault + ")";
        }
    }

    /** The pruning job runs (default retention): it may delete expired claims, never a live one or a recent completion. */
    record Prune() implements Step {
        @Override
        public String toString() {
            return "prune()";
        }
    }

    /** Every live lease of the namespace ends: {@code lease_until} is moved into the past by SQL. */
    record ExpireLeases() implements Step {
        @Override
        public String toString() {
            return "expireLeases()";
        }
    }

    /**
     * Deliveries inside one transaction of the listener (a {@code @Transactional} listener that
     * calls the executor for several messages): nothing is acked unless the transaction commits.
     * The first exception rolls it back, unless {@code catchFailures}: then the listener catches
     * each failure (the failed message goes to a dead-letter topic and is replayed later, so it
     * stays undone) and goes on. {@code rollback}: the transaction is rolled back at the end.
     */
    record Outer(int instance, TransactionKind kind, boolean rollback, boolean catchFailures, List<Step> steps)
            implements Step {
        public Outer {
            steps = List.copyOf(steps);
        }

        @Override
        public String toString() {
            return "outer(" + instance + ", " + kind + ", " + rollback + ", " + catchFailures + ", List.of("
                    + steps.stream().map(Step::toString).collect(Collectors.joining(", ")) + "))";
        }
    }

    static Deliver deliver(int instance, int key, Fault fault) {
        return new Deliver(instance, key, fault);
    }

    static AsyncDeliver asyncDeliver(int instance, int key, boolean succeeds) {
        return new AsyncDeliver(instance, key, succeeds);
    }

    static AsyncStart asyncStart(int instance, int key, boolean succeeds) {
        return new AsyncStart(instance, key, succeeds);
    }

    static AsyncEnd asyncEnd(@Nullable Fault takerFault) {
        return new AsyncEnd(takerFault);
    }

    static Batch batch(int instance, List<Integer> keys, int failAt, BatchFault fault) {
        return new Batch(instance, keys, failAt, fault);
    }

    static Poll poll(int instance, List<Integer> keys, int failAt, boolean crashBeforeCommit) {
        return new Poll(instance, keys, failAt, crashBeforeCommit, false);
    }

    static Poll poll(int instance, List<Integer> keys, int failAt, boolean crashBeforeCommit, boolean nack) {
        return new Poll(instance, keys, failAt, crashBeforeCommit, nack);
    }

    static Unrun unrun(int instance, List<Integer> keys, int rounds) {
        return new Unrun(instance, keys, rounds);
    }

    static Reused reused(int instance, int key, boolean async) {
        return new Reused(instance, key, async);
    }

    static Concurrently concurrently(int key, int copies) {
        return new Concurrently(key, copies);
    }

    static ConcurrentBatches concurrentBatches(List<Integer> first, List<Integer> second) {
        return new ConcurrentBatches(first, second);
    }

    static Overtaken overtaken(int instance, int key, Fault otherFault) {
        return new Overtaken(instance, key, otherFault);
    }

    static Prune prune() {
        return new Prune();
    }

    static ExpireLeases expireLeases() {
        return new ExpireLeases();
    }

    static Outer outer(int instance, TransactionKind kind, boolean rollback, boolean catchFailures, List<Step> steps) {
        return new Outer(instance, kind, rollback, catchFailures, steps);
    }
}
