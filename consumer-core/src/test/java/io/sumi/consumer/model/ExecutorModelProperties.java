package io.sumi.consumer.model;

import io.sumi.consumer.IdempotentExecutor;
import io.sumi.consumer.model.Shrinker.Shrunk;
import io.sumi.consumer.model.StepGenerator.Sample;
import java.util.Random;
import java.util.function.Function;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Model-based properties of the executor on a real ledger (see {@link ExecutorModel} for the model
 * and its invariants), run on each ledger a subclass gives ({@link #ledger()}): every database in
 * {@code ExecutorModelTests} here and in the budgeted {@code BudgetedExecutorModelTests} of
 * sumi-budgets, the Redis ledger in sumi-store-redis. Each property plays
 * {@link #tries()} random samples ({@link StepGenerator}: deliveries, batches, concurrent
 * duplicates, lease expiries and listener transactions, with handler failures, crashes and ledger
 * errors); the first failing sample is shrunk ({@link Shrinker}) to a short one, and the
 * assertion message gives the seed, the original sample and the shrunk one as Java code (see
 * {@link Step}); such a sequence becomes a named test in {@link ExecutorModelRegressionTests}.
 *
 * <p>{@value #TRIES} sets the tries for every ledger; {@value #SEED} replays one seed (the
 * first try uses the seed itself, so {@code -Dsumi.model.seed=S -Dsumi.model.tries=1} replays the
 * failing sample of a report). See docs/contributing-tests.md.
 */
abstract class ExecutorModelProperties {

    static final String TRIES = "sumi.model.tries";
    static final String SEED = "sumi.model.seed";
    /** At most this many runs while shrinking one failure. */
    private static final int SHRINK_BUDGET = 400;

    /** One model property: which configurations and sequences it samples. */
    enum Property {
        /** Lease mode: effects outside the database, counted per key in memory. */
        LEASE_MODE(generator -> new Sample(generator.leaseConfig(), generator.leaseSteps())),
        /** Transactional mode: effects are rows written in the ledger's transaction. */
        TRANSACTIONAL_MODE(
                generator -> new Sample(generator.transactionalConfig(false), generator.transactionalSteps())),
        /**
         * Transactional mode where one instance's executor was given the transaction manager of
         * another resource: whatever it does, nothing may be lost or doubled.
         */
        TRANSACTIONAL_MODE_WITH_AN_INSTANCE_ON_ANOTHER_TRANSACTION_MANAGER(
                generator -> new Sample(generator.transactionalConfig(true), generator.transactionalSteps()));

        private final Function<StepGenerator, Sample> sample;

        Property(Function<StepGenerator, Sample> sample) {
            this.sample = sample;
        }

        Sample sample(long seed, boolean budgeted) {
            return sample.apply(new StepGenerator(new Random(seed), budgeted));
        }
    }

    /** The ledger the properties run on (a subclass's {@code @ParameterizedClass} parameter, say). */
    abstract ModelLedger ledger();

    /**
     * A new budget decorator per instance, to run every sample budgeted ({@link
     * ModelConfig#budgeted()}); {@code null} (here): none is. sumi-budgets' model tests give one.
     */
    @Nullable
    Supplier<IdempotentExecutor.Decorator> budgets() {
        return null;
    }

    final int tries() {
        return Integer.getInteger(TRIES, ledger().defaultTries());
    }

    /**
     * Every property holds. A ledger that cannot join a transaction ({@link ModelLedger#transactional()}
     * false) runs the lease-mode one only: its subclass overrides this method with that source.
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(Property.class)
    void modelHolds(Property property) {
        ModelLedger ledger = ledger();
        Long fixed = Long.getLong(SEED);
        long base = fixed != null ? fixed : new Random().nextLong();
        int tries = tries();
        for (int i = 0; i < tries; i++) {
            long seed = seedOfTry(base, i);
            Sample sample = property.sample(seed, budgets() != null);
            Throwable failure = play(ledger, sample);
            if (failure != null) {
                Shrunk shrunk = new Shrinker(s -> play(ledger, s), SHRINK_BUDGET).shrink(sample, failure);
                throw new AssertionError(
                        property + " failed on " + ledger.name() + " at try " + (i + 1) + " of " + tries
                                + "; replay with -D" + SEED + "=" + seed + " -D" + TRIES + "=1\n"
                                + "shrunk (" + shrunk.runs() + " runs) to:\n    " + shrunk.sample() + "\n"
                                + "which fails with: " + shrunk.failure() + "\n"
                                + "original sample:\n    " + sample + "\n"
                                + "which failed with: " + failure,
                        shrunk.failure());
            }
        }
    }

    /** Try {@code i}'s seed; try 0 uses {@code base} itself, so a reported seed replays as the first try. */
    static long seedOfTry(long base, int i) {
        return base + i * 0x9E3779B97F4A7C15L;
    }

    /** Plays one sample; returns how it failed, {@code null} if every invariant held. */
    private @Nullable Throwable play(ModelLedger ledger, Sample sample) {
        try {
            ExecutorModel.check(ledger, sample.config(), sample.steps(), budgets());
            return null;
        } catch (AssertionError | RuntimeException ex) {
            return ex;
        }
    }
}
