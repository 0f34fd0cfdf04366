package io.sumi.consumer.model;

import static io.sumi.consumer.model.Step.batch;
import static io.sumi.consumer.model.Step.concurrently;
import static io.sumi.consumer.model.Step.deliver;
import static io.sumi.consumer.model.Step.expireLeases;
import static io.sumi.consumer.model.Step.outer;

import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.model.Step.BatchFault;
import io.sumi.consumer.model.Step.Fault;
import io.sumi.consumer.model.Step.TransactionKind;
import io.sumi.testing.TestDatabase;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.RandomDistribution;
import net.jqwik.api.EdgeCasesMode;
import net.jqwik.api.Tuple;

/**
 * Model-based properties of the executor on a real ledger (see {@link ExecutorModel} for the model
 * and its invariants), run against each database by a small subclass. jqwik generates sequences
 * of deliveries, batches, concurrent duplicates, lease expiries and listener transactions, with
 * handler failures, crashes and ledger errors, and shrinks a failing sequence to a short one
 * whose printout is Java code (see {@link Step}); such a sequence becomes a named test in
 * {@link ExecutorModelRegressionTests}.
 *
 * <p>Edge cases are off and sequence lengths are uniform: jqwik's edge cases of a list of steps
 * are mostly one-step sequences, which would crowd out the long ones.
 *
 * <p>Tries per property: {@link ModelTries} on the subclass (with its hook); {@code -Dsumi.model.tries=N}
 * sets them for every database (see docs/testing.md).
 */
abstract class ExecutorModelProperties {

    abstract TestDatabase database();

    /** Lease mode: effects outside the database, counted per key in memory. */
    @Property(edgeCases = EdgeCasesMode.NONE)
    void leaseMode(@ForAll("leaseConfigs") ModelConfig config, @ForAll("leaseSteps") List<Step> steps) {
        ExecutorModel.check(database(), config, steps);
    }

    /** Transactional mode: effects are rows written in the ledger's transaction. */
    @Property(edgeCases = EdgeCasesMode.NONE)
    void transactionalMode(@ForAll("transactionalConfigs") ModelConfig config, @ForAll("transactionalSteps") List<Step> steps) {
        ExecutorModel.check(database(), config, steps);
    }

    /**
     * Transactional mode where one instance's executor was given the transaction manager of another
     * resource: whatever it does, nothing may be lost or doubled.
     */
    @Property(edgeCases = EdgeCasesMode.NONE)
    void transactionalModeWithAnInstanceOnAnotherTransactionManager(@ForAll("foreignManagerConfigs") ModelConfig config,
            @ForAll("transactionalSteps") List<Step> steps) {
        ExecutorModel.check(database(), config, steps);
    }

    @Provide
    Arbitrary<ModelConfig> leaseConfigs() {
        return Combinators.combine(configs(IdempotencyMode.LEASE, false), Arbitraries.frequency(Tuple.of(3, false), Tuple.of(1, true)))
                .as((config, skewed) -> ModelConfig.config(config.mode(), config.cacheMask(), config.budgeted(), false, skewed));
    }

    @Provide
    Arbitrary<ModelConfig> transactionalConfigs() {
        return configs(IdempotencyMode.TRANSACTIONAL, false);
    }

    @Provide
    Arbitrary<ModelConfig> foreignManagerConfigs() {
        return configs(IdempotencyMode.TRANSACTIONAL, true);
    }

    private static Arbitrary<ModelConfig> configs(IdempotencyMode mode, boolean foreignManager) {
        return Combinators.combine(Arbitraries.integers().between(0, (1 << ExecutorModel.INSTANCES) - 1), Arbitraries.of(false, true))
                .as((cacheMask, budgeted) -> ModelConfig.config(mode, cacheMask, budgeted, foreignManager, false));
    }

    @Provide
    Arbitrary<List<Step>> leaseSteps() {
        return steps(
                faults(Fault.FAIL_BEFORE_EFFECT, Fault.FAIL_AFTER_EFFECT, Fault.FAIL_CHECKED, Fault.CRASH_BEFORE_CLAIM,
                        Fault.CRASH_IN_HANDLER, Fault.CRASH_AT_COMPLETE, Fault.CRASH_BEFORE_ACK, Fault.STORE_ERROR_AT_COMPLETE,
                        Fault.STORE_ERROR_AT_RELEASE),
                batchFaults(BatchFault.FAIL_WHOLE, BatchFault.CRASH_IN_HANDLER, BatchFault.CRASH_AT_COMPLETE,
                        BatchFault.CRASH_BEFORE_ACK, BatchFault.STORE_ERROR_AT_COMPLETE, BatchFault.STORE_ERROR_AT_RELEASE,
                        BatchFault.STORE_DOWN_AT_COMPLETE),
                faults(Fault.FAIL_BEFORE_EFFECT, Fault.FAIL_AFTER_EFFECT),
                batchFaults(BatchFault.FAIL_WHOLE));
    }

    @Provide
    Arbitrary<List<Step>> transactionalSteps() {
        return steps(
                faults(Fault.FAIL_BEFORE_EFFECT, Fault.FAIL_AFTER_EFFECT, Fault.FAIL_CHECKED, Fault.ROLLBACK_ONLY,
                        Fault.CRASH_BEFORE_CLAIM, Fault.CRASH_IN_HANDLER, Fault.CRASH_BEFORE_ACK),
                batchFaults(BatchFault.FAIL_WHOLE, BatchFault.ROLLBACK_ONLY, BatchFault.CRASH_IN_HANDLER, BatchFault.CRASH_BEFORE_ACK),
                faults(Fault.FAIL_BEFORE_EFFECT, Fault.FAIL_AFTER_EFFECT, Fault.ROLLBACK_ONLY),
                batchFaults(BatchFault.FAIL_WHOLE, BatchFault.ROLLBACK_ONLY));
    }

    /** {@code NONE} most of the time, else one of {@code faults}. */
    private static Arbitrary<Fault> faults(Fault... faults) {
        return Arbitraries.frequencyOf(Tuple.of(faults.length, Arbitraries.just(Fault.NONE)), Tuple.of(faults.length, Arbitraries.of(faults)));
    }

    private static Arbitrary<BatchFault> batchFaults(BatchFault... faults) {
        return Arbitraries.frequencyOf(Tuple.of(faults.length, Arbitraries.just(BatchFault.NONE)),
                Tuple.of(faults.length, Arbitraries.of(faults)));
    }

    private static Arbitrary<List<Step>> steps(Arbitrary<Fault> faults, Arbitrary<BatchFault> batchFaults, Arbitrary<Fault> innerFaults,
            Arbitrary<BatchFault> innerBatchFaults) {
        Arbitrary<Integer> instance = Arbitraries.integers().between(0, ExecutorModel.INSTANCES - 1);
        Arbitrary<Integer> key = Arbitraries.integers().between(0, ExecutorModel.KEYS - 1);
        Arbitrary<List<Integer>> batchKeys = key.list().ofMinSize(1).ofMaxSize(5);
        Arbitrary<Integer> failAt = Arbitraries.frequencyOf(Tuple.of(3, Arbitraries.just(-1)), Tuple.of(2, Arbitraries.integers().between(0, 4)));
        Arbitrary<Step> deliveries = Combinators.combine(instance, key, faults).as((i, k, fault) -> (Step) deliver(i, k, fault));
        Arbitrary<Step> batches = Combinators.combine(instance, batchKeys, failAt, batchFaults)
                .as((i, keys, at, fault) -> (Step) batch(i, keys, at < keys.size() ? at : -1, fault));
        Arbitrary<Step> concurrent = Combinators.combine(key, Arbitraries.integers().between(2, ExecutorModel.INSTANCES))
                .as((k, copies) -> (Step) concurrently(k, copies));
        Arbitrary<Step> overtakings = key.map(k -> (Step) Step.overtaken(0, k, Fault.NONE));
        Arbitrary<Step> concurrentBatches = Combinators.combine(batchKeys, batchKeys).as((a, b) -> (Step) Step.concurrentBatches(a, b));
        // Inside a listener transaction the instance of the outer step receives everything.
        Arbitrary<Step> inner = Arbitraries.oneOf(
                Combinators.combine(key, innerFaults).as((k, fault) -> (Step) deliver(0, k, fault)),
                Combinators.combine(batchKeys, failAt, innerBatchFaults).as((keys, at, fault) -> (Step) batch(0, keys, at < keys.size() ? at : -1, fault)));
        Arbitrary<Step> outers = Combinators.combine(Arbitraries.integers().between(0, 1), Arbitraries.of(TransactionKind.class),
                Arbitraries.frequency(Tuple.of(4, false), Tuple.of(1, true)), Arbitraries.of(false, true), inner.list().ofMinSize(1).ofMaxSize(4))
                .as((i, kind, rollback, catchFailures, steps) -> (Step) outer(i, kind, rollback, catchFailures, steps));
        return Arbitraries.frequencyOf(
                Tuple.of(8, deliveries),
                Tuple.of(4, batches),
                Tuple.of(2, concurrent),
                Tuple.of(2, concurrentBatches),
                Tuple.of(1, overtakings),
                Tuple.of(2, Arbitraries.just(expireLeases())),
                Tuple.of(1, Arbitraries.just(Step.prune())),
                Tuple.of(3, outers)).list().ofMinSize(1).ofMaxSize(12).withSizeDistribution(RandomDistribution.uniform());
    }
}
