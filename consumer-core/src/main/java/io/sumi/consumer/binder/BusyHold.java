package io.sumi.consumer.binder;

import io.sumi.consumer.exception.BatchFailedException;
import io.sumi.consumer.exception.MessageBusyException;
import io.sumi.consumer.exception.Verdict;
import java.time.Instant;
import java.util.Objects;
import java.util.function.BooleanSupplier;
import org.jspecify.annotations.Nullable;

/**
 * One delivery's hold under a {@link BusyPolicy}: the binder calls {@link #retry} with each
 * refusal of the delivery, and runs the delivery again in place while it answers {@code true}.
 * Not thread-safe: one delivery, one consumer thread.
 *
 * @since 0.1.0
 */
public final class BusyHold {

    private final BusyPolicy policy;
    private final long startedAt;
    private @Nullable Long firstToken;
    private @Nullable Instant firstLeaseUntil;
    private boolean firstLeaseEnded;
    private int retries;

    BusyHold(BusyPolicy policy) {
        this.policy = policy;
        this.startedAt = policy.nanoTime();
    }

    /**
     * Whether to run the delivery again in place after {@code refusal}; when {@code true}, it has
     * waited the policy's retry interval already. {@code false}: the refusal is not one the policy
     * holds (not a busy key, a row awaiting reconciliation nor an unreachable ledger), or the hold
     * is past its bound, or
     * {@code running} says the container stops, or the thread was interrupted (its interrupt flag
     * is set again): hand the delivery back to the broker.
     *
     * @param refusal Sumi's refusal as {@link Verdict#find} returned it (a {@link BatchFailedException}
     *     stands for its cause)
     * @param running whether the listener container still runs
     */
    public boolean retry(RuntimeException refusal, BooleanSupplier running) {
        if (!keep(refusal, running)) {
            return false;
        }
        try {
            policy.sleep();
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            return false;
        }
        return true;
    }

    /**
     * The decision of {@link #retry} without its wait: whether to keep the delivery after
     * {@code refusal}. For a binder that must not wait on the delivery's thread before it keeps the
     * delivery: a Kafka share group renews the record's lock at once and waits the policy's
     * {@linkplain BusyPolicy#retryInterval() retry interval} when the record comes back, so that
     * the held records of one poll wait one interval together, not one each.
     *
     * @param refusal as for {@link #retry}
     * @param running whether the listener container still runs
     * @since 0.1.0
     */
    public boolean keep(RuntimeException refusal, BooleanSupplier running) {
        Objects.requireNonNull(refusal, "refusal");
        Throwable cause =
                refusal instanceof BatchFailedException batch && batch.getCause() != null ? batch.getCause() : refusal;
        Verdict verdict = Verdict.of(cause);
        if (verdict != Verdict.BUSY && verdict != Verdict.RECONCILE && verdict != Verdict.LEDGER_UNAVAILABLE) {
            return false;
        }
        if (verdict == Verdict.BUSY) {
            observe((MessageBusyException) cause);
        }
        if (!running.getAsBoolean() || pastBound(verdict)) {
            return false;
        }
        retries++;
        return true;
    }

    /** How many times the hold kept the delivery ({@link #retry} or {@link #keep} answered {@code true}). */
    public int retries() {
        return retries;
    }

    /**
     * Whether the holder's lease the hold first met has ended (a busy answer with another lease,
     * or a busy refusal that names no lease). A claim that no longer answers busy ends the hold
     * by itself: the delivery then runs or is a duplicate.
     */
    public boolean firstLeaseEnded() {
        return firstLeaseEnded;
    }

    private void observe(MessageBusyException busy) {
        Long token = busy.holderClaimToken();
        Instant leaseUntil = busy.holderLeaseUntil();
        if (token == null || leaseUntil == null) {
            // Not a claim's answer (a lease lost before completion): nothing the database vouches for.
            firstLeaseEnded = true;
            return;
        }
        if (firstToken == null) {
            firstToken = token;
            firstLeaseUntil = leaseUntil;
        } else if (!firstToken.equals(token) || !leaseUntil.equals(firstLeaseUntil)) {
            // Renewed or taken over: the database has seen the first lease end.
            firstLeaseEnded = true;
        }
    }

    private boolean pastBound(Verdict verdict) {
        if (verdict == Verdict.LEDGER_UNAVAILABLE) {
            // Handing the delivery back could only spend the broker's budget: every delivery meets
            // the same outage. Held while the container runs (see BusyPolicy).
            return false;
        }
        if (verdict == Verdict.BUSY && policy.holdsBusyKeysWhileTheirHolderLives()) {
            return false; // the holder's max run time bounds it (see BusyPolicy)
        }
        boolean waitedEnough = policy.nanoTime() - startedAt >= policy.maxWait().toNanos();
        return waitedEnough && (verdict == Verdict.RECONCILE || firstLeaseEnded);
    }
}
