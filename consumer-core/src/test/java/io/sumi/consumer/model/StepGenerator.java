package io.sumi.consumer.model;

import static io.sumi.consumer.model.Step.concurrently;
import static io.sumi.consumer.model.Step.deliver;
import static io.sumi.consumer.model.Step.expireLeases;

import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.model.Step.BatchFault;
import io.sumi.consumer.model.Step.Fault;
import io.sumi.consumer.model.Step.TransactionKind;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * Random configurations and step sequences for the model ({@link ExecutorModel}), drawn from one
 * seeded {@link Random}: the same seed gives the same sample. Sequences are 1 to
 * {@value #MAX_STEPS} steps long, every length equally likely, so long sequences are as frequent
 * as short ones.
 */
final class StepGenerator {

    static final int MAX_STEPS = 12;

    private final Random random;
    /** Whether every configuration is budgeted (sumi-budgets' model tests) or none is (the core's). */
    private final boolean budgeted;

    StepGenerator(Random random, boolean budgeted) {
        this.random = random;
        this.budgeted = budgeted;
    }

    /** A configuration and a sequence, as one run of the model takes them. */
    record Sample(ModelConfig config, List<Step> steps) {
        Sample {
            steps = List.copyOf(steps);
        }

        /** Java code that replays the sample in a regression test. */
        @Override
        public String toString() {
            StringBuilder out = new StringBuilder("ExecutorModel.check(database, ")
                    .append(config)
                    .append(", List.of(");
            for (int i = 0; i < steps.size(); i++) {
                out.append(i == 0 ? "\n        " : ",\n        ").append(steps.get(i));
            }
            return out.append("));").toString();
        }
    }

    // ---------------------------------------------------------------- configurations

    ModelConfig leaseConfig() {
        ModelConfig config = config(IdempotencyMode.LEASE, false);
        boolean skewed = random.nextInt(4) == 0; // one in four: instance 1's clock runs ahead
        return ModelConfig.config(config.mode(), config.cacheMask(), config.budgeted(), false, skewed);
    }

    ModelConfig transactionalConfig(boolean foreignManager) {
        return config(IdempotencyMode.TRANSACTIONAL, foreignManager);
    }

    private ModelConfig config(IdempotencyMode mode, boolean foreignManager) {
        int cacheMask = random.nextInt(1 << ExecutorModel.INSTANCES);
        return ModelConfig.config(mode, cacheMask, budgeted, foreignManager, false);
    }

    // ---------------------------------------------------------------- sequences

    List<Step> leaseSteps() {
        return steps(
                new Fault[] {
                    Fault.FAIL_BEFORE_EFFECT,
                    Fault.FAIL_AFTER_EFFECT,
                    Fault.FAIL_CHECKED,
                    Fault.CRASH_BEFORE_CLAIM,
                    Fault.CRASH_IN_HANDLER,
                    Fault.CRASH_AT_COMPLETE,
                    Fault.CRASH_BEFORE_ACK,
                    Fault.STORE_ERROR_AT_COMPLETE,
                    Fault.STORE_ERROR_AT_RELEASE,
                    Fault.NACK
                },
                new BatchFault[] {
                    BatchFault.FAIL_WHOLE,
                    BatchFault.CRASH_IN_HANDLER,
                    BatchFault.CRASH_AT_COMPLETE,
                    BatchFault.CRASH_BEFORE_ACK,
                    BatchFault.STORE_ERROR_AT_COMPLETE,
                    BatchFault.STORE_ERROR_AT_RELEASE,
                    BatchFault.STORE_DOWN_AT_COMPLETE,
                    BatchFault.NACK
                },
                new Fault[] {Fault.FAIL_BEFORE_EFFECT, Fault.FAIL_AFTER_EFFECT},
                new BatchFault[] {BatchFault.FAIL_WHOLE});
    }

    List<Step> transactionalSteps() {
        return steps(
                new Fault[] {
                    Fault.FAIL_BEFORE_EFFECT,
                    Fault.FAIL_AFTER_EFFECT,
                    Fault.FAIL_CHECKED,
                    Fault.ROLLBACK_ONLY,
                    Fault.CRASH_BEFORE_CLAIM,
                    Fault.CRASH_IN_HANDLER,
                    Fault.CRASH_BEFORE_ACK,
                    Fault.NACK
                },
                new BatchFault[] {
                    BatchFault.FAIL_WHOLE,
                    BatchFault.ROLLBACK_ONLY,
                    BatchFault.CRASH_IN_HANDLER,
                    BatchFault.CRASH_BEFORE_ACK,
                    BatchFault.NACK
                },
                new Fault[] {Fault.FAIL_BEFORE_EFFECT, Fault.FAIL_AFTER_EFFECT, Fault.ROLLBACK_ONLY},
                new BatchFault[] {BatchFault.FAIL_WHOLE, BatchFault.ROLLBACK_ONLY});
    }

    /** Step kinds and their weights: deliveries most often, then batches and listener transactions. */
    private enum Kind {
        DELIVER(8),
        ASYNC_DELIVER(1),
        ASYNC_START(3),
        ASYNC_END(3),
        BATCH(4),
        POLL(3),
        UNRUN(2),
        REUSED(2),
        CONCURRENTLY(2),
        CONCURRENT_BATCHES(2),
        OVERTAKEN(1),
        EXPIRE_LEASES(2),
        PRUNE(1),
        OUTER(3);

        final int weight;

        Kind(int weight) {
            this.weight = weight;
        }
    }

    private List<Step> steps(
            Fault[] faults, BatchFault[] batchFaults, Fault[] innerFaults, BatchFault[] innerBatchFaults) {
        int length = 1 + random.nextInt(MAX_STEPS);
        List<Step> steps = new ArrayList<>(length);
        for (int i = 0; i < length; i++) {
            steps.add(
                    switch (kind()) {
                        case DELIVER -> deliver(instance(), key(), pick(Fault.NONE, faults));
                        case ASYNC_DELIVER -> Step.asyncDeliver(instance(), key(), random.nextBoolean());
                        case ASYNC_START -> Step.asyncStart(instance(), key(), random.nextBoolean());
                        case ASYNC_END -> Step.asyncEnd(random.nextBoolean() ? null : pick(Fault.NONE, faults));
                        case BATCH -> batch(instance(), batchFaults);
                        case POLL -> poll();
                        case UNRUN -> Step.unrun(instance(), batchKeys(), 1 + random.nextInt(3));
                        case REUSED -> Step.reused(instance(), key(), random.nextBoolean());
                        case CONCURRENTLY -> concurrently(key(), 2 + random.nextInt(ExecutorModel.INSTANCES - 1));
                        case CONCURRENT_BATCHES -> Step.concurrentBatches(batchKeys(), batchKeys());
                        case OVERTAKEN -> Step.overtaken(0, key(), pick(Fault.NONE, faults));
                        case EXPIRE_LEASES -> expireLeases();
                        case PRUNE -> Step.prune();
                        case OUTER -> outer(innerFaults, innerBatchFaults);
                    });
        }
        return steps;
    }

    private Kind kind() {
        int total = 0;
        for (Kind kind : Kind.values()) {
            total += kind.weight;
        }
        int draw = random.nextInt(total);
        for (Kind kind : Kind.values()) {
            draw -= kind.weight;
            if (draw < 0) {
                return kind;
            }
        }
        throw new IllegalStateException();
    }

    private Step batch(int instance, BatchFault[] faults) {
        List<Integer> keys = batchKeys();
        BatchFault fault = pick(BatchFault.NONE, faults);
        // A nacking handler nacks instead of reporting a failed message.
        return Step.batch(instance, keys, fault == BatchFault.NACK ? -1 : failAt(keys.size()), fault);
    }

    private Step poll() {
        List<Integer> keys = batchKeys();
        int failAt = failAt(keys.size());
        return Step.poll(instance(), keys, failAt, random.nextInt(5) == 0, failAt >= 0 && random.nextBoolean());
    }

    /** Inside a listener transaction the instance of the outer step receives everything. */
    private Step outer(Fault[] innerFaults, BatchFault[] innerBatchFaults) {
        int instance = random.nextInt(2);
        TransactionKind kind = TransactionKind.values()[random.nextInt(TransactionKind.values().length)];
        boolean rollback = random.nextInt(5) == 0; // one in five
        boolean catchFailures = random.nextBoolean();
        int count = 1 + random.nextInt(4);
        List<Step> inner = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            inner.add(
                    random.nextBoolean()
                            ? deliver(0, key(), pick(Fault.NONE, innerFaults))
                            : batch(0, innerBatchFaults));
        }
        return Step.outer(instance, kind, rollback, catchFailures, inner);
    }

    /** {@code none} half of the time, else one of {@code faults}, each equally likely. */
    private <F> F pick(F none, F[] faults) {
        return random.nextBoolean() ? none : faults[random.nextInt(faults.length)];
    }

    private int instance() {
        return random.nextInt(ExecutorModel.INSTANCES);
    }

    private int key() {
        return random.nextInt(ExecutorModel.KEYS);
    }

    /** 1 to 5 keys, repeats likely. */
    private List<Integer> batchKeys() {
        int size = 1 + random.nextInt(5);
        List<Integer> keys = new ArrayList<>(size);
        for (int i = 0; i < size; i++) {
            keys.add(key());
        }
        return keys;
    }

    /** No failing message three times in five; else an index 0..4 ({@code -1} if beyond the batch). */
    private int failAt(int size) {
        if (random.nextInt(5) < 3) {
            return -1;
        }
        int at = random.nextInt(5);
        return at < size ? at : -1;
    }
}
