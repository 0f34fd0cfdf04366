package io.sumi.store;

import java.time.Instant;
import org.jspecify.annotations.Nullable;

/**
 * One row of the ledger, as read by the store.
 *
 * @param consumer the ledger namespace (listener id, bean method, or a configured name)
 * @param messageId the idempotency key of the message
 * @param status the row's status
 * @param claimToken a random token written by the claim that last took the row; completing or
 *     releasing a claim is fenced on it, so a consumer whose lease was taken over cannot
 *     complete or release the new owner's claim
 * @param leaseUntil when the current lease ends ({@code null} once completed)
 * @param attempts how many times the message has been claimed
 * @param fingerprint a hash of the payload, never the payload itself ({@code null} if unknown)
 * @param lastError a summary of the last failure, if any
 * @param firstSeenAt when the message was first claimed
 * @param processedAt when the message was completed ({@code null} while in progress)
 */
public record ProcessedMessage(
        String consumer,
        String messageId,
        MessageStatus status,
        long claimToken,
        @Nullable Instant leaseUntil,
        int attempts,
        @Nullable String fingerprint,
        @Nullable String lastError,
        Instant firstSeenAt,
        @Nullable Instant processedAt) {

    /** Whether the row is completed. */
    public boolean isCompleted() {
        return status == MessageStatus.COMPLETED;
    }
}
