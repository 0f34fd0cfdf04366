package io.sumi.consumer.exception;

import java.time.Instant;
import org.jspecify.annotations.Nullable;

/**
 * Another consumer holds a live lease on the message's key. Retryable: do not acknowledge the
 * message; deliver it again later, when the other consumer has completed it (it is then a
 * duplicate) or released it (it is then claimed and run).
 *
 * <p>When the refusal comes from a claim, it carries the holder's lease as the ledger returned it
 * ({@link #holderClaimToken()}, {@link #holderLeaseUntil()}, both in the database's terms), so a
 * binder can tell whether the lease it first met has ended ({@link io.sumi.consumer.binder.BusyPolicy}).
 */
public class MessageBusyException extends IdempotencyException {

    private final @Nullable Long holderClaimToken;
    private final @Nullable Instant holderLeaseUntil;

    public MessageBusyException(String message) {
        this(message, null, null);
    }

    /**
     * @param holderClaimToken the claim token of the row that stopped the claim ({@code null}: unknown)
     * @param holderLeaseUntil its {@code lease_until}, by the database's clock ({@code null}: unknown)
     * @since 0.1.0
     */
    public MessageBusyException(String message, @Nullable Long holderClaimToken, @Nullable Instant holderLeaseUntil) {
        super(message);
        this.holderClaimToken = holderClaimToken;
        this.holderLeaseUntil = holderLeaseUntil;
    }

    /** The claim token of the holder's row, or {@code null} if this refusal did not come from a claim. */
    public @Nullable Long holderClaimToken() {
        return holderClaimToken;
    }

    /** When the holder's lease ends, as the ledger stores it, or {@code null} if unknown. */
    public @Nullable Instant holderLeaseUntil() {
        return holderLeaseUntil;
    }

    /** {@link Verdict#BUSY}. */
    @Override
    public Verdict verdict() {
        return Verdict.BUSY;
    }

    @Override
    public boolean isRetryable() {
        return true;
    }
}
