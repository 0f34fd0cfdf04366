package io.sumi.consumer.exception;

import org.jspecify.annotations.Nullable;

/**
 * What a broker binder does with a message Sumi refused, by the exception Sumi raised. Shared by
 * the binders of queue brokers (RabbitMQ, JMS), so that a refusal means the same on each:
 * <ul>
 *   <li>{@link #REJECT}: no key, an invalid key, a rejected fingerprint, a reply too large to
 *   keep. Delivering it again cannot succeed: dead-letter it at once.</li>
 *   <li>{@link #BUSY}: another consumer holds a live lease on the key. Deliver it again after a
 *   wait (the holder completes it, then it is a duplicate, or lets it go).</li>
 *   <li>{@link #RECONCILE}: the ledger row awaits an operator's reconciliation. Deliver it again
 *   after a wait; it is not run until reconciled.</li>
 *   <li>{@link #BUDGET}: the handler's budget is spent (sumi-budgets' {@code BudgetExhaustedException}).
 *   Stop consuming until the budget can take calls, then deliver it again.</li>
 *   <li>{@link #LEDGER_UNAVAILABLE}: Sumi's own ledger call for the message failed because the
 *   ledger's database is unreachable ({@link LedgerUnavailableException}). Not the message's fault:
 *   hold it and run it again in place, as a busy key, for as long as the outage lasts; never spend
 *   the broker's redelivery budget on it.</li>
 * </ul>
 *
 * @since 0.1.0
 */
public enum Verdict {
    REJECT,
    BUSY,
    RECONCILE,
    BUDGET,
    /**
     * The ledger could not be reached: retried, never acknowledged.
     *
     * @since 0.1.0
     */
    LEDGER_UNAVAILABLE;

    /**
     * The verdict for {@code t} itself (not its causes), or {@code null} if it is not Sumi's refusal:
     * the verdict the exception gives itself ({@link IdempotencyException#verdict()}).
     */
    public static @Nullable Verdict of(@Nullable Throwable t) {
        return t instanceof IdempotencyException refusal ? refusal.verdict() : null;
    }

    /**
     * Sumi's refusal in {@code failure}'s cause chain (a listener adapter wraps it), or
     * {@code null} if the failure is the handler's own. A {@link BatchFailedException} ends the
     * search: what failed is its cause, the batch's message at its index.
     */
    public static @Nullable RuntimeException find(@Nullable Throwable failure) {
        for (Throwable t : Causes.chain(failure)) {
            if (t instanceof BatchFailedException batch) {
                return of(batch.getCause()) != null ? batch : null;
            }
            if (of(t) != null) {
                return (RuntimeException) t;
            }
        }
        return null;
    }

    /** Whether redelivering the message may succeed later (everything but {@link #REJECT}). */
    public boolean redeliver() {
        return this != REJECT;
    }
}
