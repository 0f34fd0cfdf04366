package io.sumi.consumer.model;

import io.sumi.consumer.model.Step.Batch;
import io.sumi.consumer.model.Step.BatchFault;
import io.sumi.consumer.model.Step.ConcurrentBatches;
import io.sumi.consumer.model.Step.Concurrently;
import io.sumi.consumer.model.Step.Deliver;
import io.sumi.consumer.model.Step.Fault;
import io.sumi.consumer.model.Step.Outer;
import io.sumi.consumer.model.Step.Overtaken;
import io.sumi.consumer.model.StepGenerator.Sample;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * Shrinks a failing {@link Sample} to a short one that still fails: greedily, it tries samples
 * that are strictly simpler (fewer steps, fewer keys in a batch, fewer steps in a listener
 * transaction, a step without its fault, lower keys and instances, a plainer configuration) and
 * keeps the first that still fails, until none does or the budget of runs is spent. Every
 * candidate is simpler in a well-founded order, so shrinking ends.
 */
final class Shrinker {

    private final Function<Sample, @Nullable Throwable> run;
    private final int budget;
    private int runs;

    /**
     * @param run plays a sample; returns how it failed, {@code null} if it passed
     * @param budget at most this many runs
     */
    Shrinker(Function<Sample, @Nullable Throwable> run, int budget) {
        this.run = run;
        this.budget = budget;
    }

    /** The shrunk sample and the failure it ends with. */
    record Shrunk(Sample sample, Throwable failure, int runs) {}

    Shrunk shrink(Sample failing, Throwable failure) {
        Sample current = failing;
        Throwable last = failure;
        boolean progress = true;
        while (progress && runs < budget) {
            progress = false;
            for (Sample candidate : candidates(current)) {
                if (runs >= budget) {
                    break;
                }
                runs++;
                Throwable failed = run.apply(candidate);
                if (failed != null) {
                    current = candidate;
                    last = failed;
                    progress = true;
                    break;
                }
            }
        }
        return new Shrunk(current, last, runs);
    }

    // ---------------------------------------------------------------- candidates, simplest first

    static List<Sample> candidates(Sample sample) {
        List<Sample> out = new ArrayList<>();
        ModelConfig config = sample.config();
        List<Step> steps = sample.steps();
        // Fewer steps: drop halves, quarters, ... down to single steps.
        for (int chunk = steps.size() / 2; chunk >= 1; chunk /= 2) {
            for (int from = 0; from + chunk <= steps.size(); from += chunk) {
                List<Step> fewer = new ArrayList<>(steps.subList(0, from));
                fewer.addAll(steps.subList(from + chunk, steps.size()));
                if (!fewer.isEmpty()) {
                    out.add(new Sample(config, fewer));
                }
            }
        }
        // Simpler steps, one at a time.
        for (int i = 0; i < steps.size(); i++) {
            for (List<Step> replacement : simpler(steps.get(i))) {
                List<Step> changed = new ArrayList<>(steps.subList(0, i));
                changed.addAll(replacement);
                changed.addAll(steps.subList(i + 1, steps.size()));
                out.add(new Sample(config, changed));
            }
        }
        // A plainer configuration.
        for (int bit = 0; bit < ExecutorModel.INSTANCES; bit++) {
            if ((config.cacheMask() & (1 << bit)) != 0) {
                out.add(new Sample(
                        ModelConfig.config(
                                config.mode(),
                                config.cacheMask() & ~(1 << bit),
                                config.budgeted(),
                                config.foreignTransactionManager(),
                                config.skewedClock()),
                        steps));
            }
        }
        if (config.budgeted()) {
            out.add(new Sample(
                    ModelConfig.config(
                            config.mode(),
                            config.cacheMask(),
                            false,
                            config.foreignTransactionManager(),
                            config.skewedClock()),
                    steps));
        }
        if (config.skewedClock()) {
            out.add(new Sample(
                    ModelConfig.config(
                            config.mode(),
                            config.cacheMask(),
                            config.budgeted(),
                            config.foreignTransactionManager(),
                            false),
                    steps));
        }
        if (config.foreignTransactionManager()) {
            out.add(new Sample(
                    ModelConfig.config(
                            config.mode(), config.cacheMask(), config.budgeted(), false, config.skewedClock()),
                    steps));
        }
        return out;
    }

    /** Simpler forms of one step; each is a list because a listener transaction may be unwrapped into its steps. */
    private static List<List<Step>> simpler(Step step) {
        List<List<Step>> out = new ArrayList<>();
        if (step instanceof Deliver d) {
            if (d.fault() != Fault.NONE) {
                out.add(List.of(Step.deliver(d.instance(), d.key(), Fault.NONE)));
            }
            if (d.instance() != 0) {
                out.add(List.of(Step.deliver(0, d.key(), d.fault())));
            }
            if (d.key() != 0) {
                out.add(List.of(Step.deliver(d.instance(), 0, d.fault())));
            }
        } else if (step instanceof Step.AsyncDeliver a) {
            if (!a.succeeds()) {
                out.add(List.of(Step.asyncDeliver(a.instance(), a.key(), true)));
            }
            if (a.instance() != 0) {
                out.add(List.of(Step.asyncDeliver(0, a.key(), a.succeeds())));
            }
            if (a.key() != 0) {
                out.add(List.of(Step.asyncDeliver(a.instance(), 0, a.succeeds())));
            }
        } else if (step instanceof Step.AsyncStart a) {
            // The future completed at once: no other step between its start and its end.
            out.add(List.of(Step.asyncDeliver(a.instance(), a.key(), a.succeeds())));
            if (!a.succeeds()) {
                out.add(List.of(Step.asyncStart(a.instance(), a.key(), true)));
            }
            if (a.instance() != 0) {
                out.add(List.of(Step.asyncStart(0, a.key(), a.succeeds())));
            }
            if (a.key() != 0) {
                out.add(List.of(Step.asyncStart(a.instance(), 0, a.succeeds())));
            }
        } else if (step instanceof Step.AsyncEnd e && e.takerFault() != null) {
            out.add(List.of(Step.asyncEnd(null)));
            if (e.takerFault() != Fault.NONE) {
                out.add(List.of(Step.asyncEnd(Fault.NONE)));
            }
        } else if (step instanceof Batch b) {
            for (int i = 0; b.keys().size() > 1 && i < b.keys().size(); i++) {
                List<Integer> keys = new ArrayList<>(b.keys());
                keys.remove(i);
                int failAt = b.failAt() == i ? -1 : b.failAt() > i ? b.failAt() - 1 : b.failAt();
                out.add(List.of(Step.batch(b.instance(), keys, failAt, b.fault())));
            }
            if (b.failAt() != -1) {
                out.add(List.of(Step.batch(b.instance(), b.keys(), -1, b.fault())));
            }
            if (b.fault() != BatchFault.NONE) {
                out.add(List.of(Step.batch(b.instance(), b.keys(), b.failAt(), BatchFault.NONE)));
            }
            if (b.instance() != 0) {
                out.add(List.of(Step.batch(0, b.keys(), b.failAt(), b.fault())));
            }
            for (List<Integer> keys : lowerKeys(b.keys())) {
                out.add(List.of(Step.batch(b.instance(), keys, b.failAt(), b.fault())));
            }
        } else if (step instanceof Step.Poll p) {
            for (int i = 0; p.keys().size() > 1 && i < p.keys().size(); i++) {
                List<Integer> keys = new ArrayList<>(p.keys());
                keys.remove(i);
                int failAt = p.failAt() == i ? -1 : p.failAt() > i ? p.failAt() - 1 : p.failAt();
                out.add(List.of(Step.poll(p.instance(), keys, failAt, p.crashBeforeCommit(), p.nack() && failAt >= 0)));
            }
            if (p.failAt() != -1) {
                out.add(List.of(Step.poll(p.instance(), p.keys(), -1, p.crashBeforeCommit(), false)));
            }
            if (p.nack()) {
                out.add(List.of(Step.poll(p.instance(), p.keys(), p.failAt(), p.crashBeforeCommit(), false)));
            }
            if (p.crashBeforeCommit()) {
                out.add(List.of(Step.poll(p.instance(), p.keys(), p.failAt(), false, p.nack())));
            }
            if (p.instance() != 0) {
                out.add(List.of(Step.poll(0, p.keys(), p.failAt(), p.crashBeforeCommit(), p.nack())));
            }
            for (List<Integer> keys : lowerKeys(p.keys())) {
                out.add(List.of(Step.poll(p.instance(), keys, p.failAt(), p.crashBeforeCommit(), p.nack())));
            }
        } else if (step instanceof Step.Unrun u) {
            for (int i = 0; u.keys().size() > 1 && i < u.keys().size(); i++) {
                List<Integer> keys = new ArrayList<>(u.keys());
                keys.remove(i);
                out.add(List.of(Step.unrun(u.instance(), keys, u.rounds())));
            }
            if (u.rounds() > 1) {
                out.add(List.of(Step.unrun(u.instance(), u.keys(), 1)));
            }
            if (u.instance() != 0) {
                out.add(List.of(Step.unrun(0, u.keys(), u.rounds())));
            }
            for (List<Integer> keys : lowerKeys(u.keys())) {
                out.add(List.of(Step.unrun(u.instance(), keys, u.rounds())));
            }
        } else if (step instanceof Step.Reused r) {
            if (r.async()) {
                out.add(List.of(Step.reused(r.instance(), r.key(), false)));
            }
            if (r.instance() != 0) {
                out.add(List.of(Step.reused(0, r.key(), r.async())));
            }
            if (r.key() != 0) {
                out.add(List.of(Step.reused(r.instance(), 0, r.async())));
            }
        } else if (step instanceof Concurrently c) {
            if (c.copies() > 2) {
                out.add(List.of(Step.concurrently(c.key(), 2)));
            }
            if (c.key() != 0) {
                out.add(List.of(Step.concurrently(0, c.copies())));
            }
        } else if (step instanceof ConcurrentBatches c) {
            for (int i = 0; c.first().size() > 1 && i < c.first().size(); i++) {
                List<Integer> keys = new ArrayList<>(c.first());
                keys.remove(i);
                out.add(List.of(Step.concurrentBatches(keys, c.second())));
            }
            for (int i = 0; c.second().size() > 1 && i < c.second().size(); i++) {
                List<Integer> keys = new ArrayList<>(c.second());
                keys.remove(i);
                out.add(List.of(Step.concurrentBatches(c.first(), keys)));
            }
            for (List<Integer> keys : lowerKeys(c.first())) {
                out.add(List.of(Step.concurrentBatches(keys, c.second())));
            }
            for (List<Integer> keys : lowerKeys(c.second())) {
                out.add(List.of(Step.concurrentBatches(c.first(), keys)));
            }
        } else if (step instanceof Overtaken o) {
            if (o.otherFault() != Fault.NONE) {
                out.add(List.of(Step.overtaken(o.instance(), o.key(), Fault.NONE)));
            }
            if (o.key() != 0) {
                out.add(List.of(Step.overtaken(o.instance(), 0, o.otherFault())));
            }
        } else if (step instanceof Outer o) {
            // Without the listener's transaction: its steps on its instance, one after the other.
            List<Step> unwrapped = new ArrayList<>();
            for (Step inner : o.steps()) {
                unwrapped.add(
                        inner instanceof Deliver d
                                ? Step.deliver(o.instance(), d.key(), d.fault())
                                : inner instanceof Batch b
                                        ? Step.batch(o.instance(), b.keys(), b.failAt(), b.fault())
                                        : inner);
            }
            out.add(unwrapped);
            for (int i = 0; o.steps().size() > 1 && i < o.steps().size(); i++) {
                List<Step> fewer = new ArrayList<>(o.steps());
                fewer.remove(i);
                out.add(List.of(Step.outer(o.instance(), o.kind(), o.rollback(), o.catchFailures(), fewer)));
            }
            for (int i = 0; i < o.steps().size(); i++) {
                for (List<Step> replacement : simpler(o.steps().get(i))) {
                    List<Step> changed = new ArrayList<>(o.steps().subList(0, i));
                    changed.addAll(replacement);
                    changed.addAll(o.steps().subList(i + 1, o.steps().size()));
                    out.add(List.of(Step.outer(o.instance(), o.kind(), o.rollback(), o.catchFailures(), changed)));
                }
            }
            if (o.rollback()) {
                out.add(List.of(Step.outer(o.instance(), o.kind(), false, o.catchFailures(), o.steps())));
            }
            if (o.catchFailures()) {
                out.add(List.of(Step.outer(o.instance(), o.kind(), o.rollback(), false, o.steps())));
            }
            if (o.instance() != 0) {
                out.add(List.of(Step.outer(0, o.kind(), o.rollback(), o.catchFailures(), o.steps())));
            }
        }
        return out;
    }

    /** The keys with one of them (each in turn) lowered to 0. */
    private static List<List<Integer>> lowerKeys(List<Integer> keys) {
        List<List<Integer>> out = new ArrayList<>();
        for (int i = 0; i < keys.size(); i++) {
            if (keys.get(i) != 0) {
                List<Integer> lower = new ArrayList<>(keys);
                lower.set(i, 0);
                out.add(lower);
            }
        }
        return out;
    }
}
