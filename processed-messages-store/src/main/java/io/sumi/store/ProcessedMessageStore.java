package io.sumi.store;

import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * The ledger of processed messages: the store SPI behind Sumi's idempotent consumers.
 *
 * <p>Rows are keyed by {@code (consumer, messageId)}. A message is taken in one of two ways:
 * <ul>
 *   <li>{@link #claim} / {@link #claimAll} (lease mode) insert an {@code IN_PROGRESS} row with a
 *   lease, or take over a row whose lease has expired. The caller runs its handler and then
 *   {@link #complete completes} or {@link #release releases} the claim. Call these outside of any
 *   transaction on the ledger's database, so the claim is visible to other consumers at once.</li>
 *   <li>{@link #claimCompleted} / {@link #claimAllCompleted} (transactional mode) insert the row
 *   {@code COMPLETED} inside the caller's transaction: it commits with the handler's own rows or
 *   rolls back with them. A concurrent duplicate waits on the primary key and then sees the
 *   committed row.</li>
 * </ul>
 *
 * <p>Every claim is one atomic statement that returns the outcome and the row that decided it, so
 * a failed claim needs no second read (an implementation may read again in the rare case where a
 * concurrent transaction committed between its snapshot and its statement). Batch variants take
 * one round trip for the whole batch. Implementations are thread-safe; they never store the
 * messages' payloads, only the fingerprints they are given (and, for handlers that ask for it, the
 * replies they returned: {@link StoredReply}).
 *
 * <p>Time: instances do not agree on the time, so an implementation decides every lease (take
 * over, end on release) and writes every ledger time on one clock that all instances share; the
 * JDBC store uses the database's clock. Keys are compared exactly ({@code "k"} and {@code "k "}
 * are two keys); a key the store cannot hold losslessly is refused, never altered.
 *
 * <p>For a store author: every abstract method is part of the contract; there are no optional
 * capabilities (the executor renews leases, marks rows for reconciliation and keeps replies by
 * default, and the gauges read {@link #consumerStats}), so a store that compiles has everything the
 * executor may call, and no call fails at the first message with {@code UnsupportedOperationException}.
 * The {@code default} methods only express a single-row call through its batch form (or a claim
 * through its batch); a store may override them for a cheaper statement.
 * {@link ForwardingProcessedMessageStore} is the base for a decorator.
 */
public interface ProcessedMessageStore {

    /** The longest consumer name and message id a store accepts by default. */
    int DEFAULT_MAX_KEY_LENGTH = 200;

    /**
     * The longest consumer name or message id this store accepts. Longer ones are rejected with an
     * {@link IllegalArgumentException}, never truncated (two long keys with a common prefix must
     * not collide).
     */
    default int maxKeyLength() {
        return DEFAULT_MAX_KEY_LENGTH;
    }

    /**
     * Claims one message for {@code lease}: inserts it {@code IN_PROGRESS}, or takes over a row
     * whose lease has expired (counting one more attempt).
     *
     * @return {@code CLAIMED} with the caller's claim, {@code DUPLICATE} with the completed row,
     *     or {@code BUSY} with the row of the live claim that holds it
     * @throws IllegalArgumentException if the consumer or message id is empty, too long, or cannot be
     *     stored losslessly (the JDBC store refuses NUL and unpaired surrogates); not retryable
     */
    default ClaimResult claim(String consumer, ClaimRequest request, Duration lease) {
        return claimAll(consumer, List.of(request), lease).get(0);
    }

    /**
     * Claims several messages of one consumer in one round trip, as {@link #claim} does for each.
     * A message id that occurs more than once is claimed once; each occurrence gets the same result.
     *
     * @return one result per request, in the order of {@code requests}
     */
    List<ClaimResult> claimAll(String consumer, List<ClaimRequest> requests, Duration lease);

    /**
     * Inserts the message {@code COMPLETED} in the caller's current transaction (transactional
     * mode). An expired {@code IN_PROGRESS} row is taken over and completed; a live one is
     * {@code BUSY}.
     *
     * @return {@code CLAIMED} if this transaction wrote the row, else {@code DUPLICATE} or
     *     {@code BUSY} with the existing row
     */
    default ClaimResult claimCompleted(String consumer, ClaimRequest request) {
        return claimAllCompleted(consumer, List.of(request)).get(0);
    }

    /**
     * Batch form of {@link #claimCompleted}, in one round trip.
     *
     * @return one result per request, in the order of {@code requests}
     */
    List<ClaimResult> claimAllCompleted(String consumer, List<ClaimRequest> requests);

    /**
     * Marks a lease-mode claim completed.
     *
     * @param claim the row returned by a {@code CLAIMED} result
     * @return {@code false} if the claim was no longer the caller's (its lease expired and another
     *     consumer took the message over); the row is then left to that consumer
     */
    default boolean complete(ProcessedMessage claim) {
        return completeAll(claim.consumer(), claim.claimToken(), List.of(claim.messageId())) == 1;
    }

    /**
     * Marks several claims of one consumer, taken with one token, completed in one round trip.
     *
     * @return how many rows were completed
     */
    int completeAll(String consumer, long claimToken, Collection<String> messageIds);

    /**
     * Marks a lease-mode claim completed and keeps its handler's reply with the row, in one
     * statement: a row completed this way always has its reply (a duplicate of the message is
     * answered with it, {@link #findReply}). Fenced on the claim token as {@link #complete} is.
     *
     * @param claim the row returned by a {@code CLAIMED} result
     * @param reply the reply to keep, or {@code null} for none (then this is {@link #complete})
     * @return {@code false} if the claim was no longer the caller's; nothing is written then
     * @since 0.1.0
     */
    boolean complete(ProcessedMessage claim, @Nullable StoredReply reply);

    /**
     * Keeps the reply of a transactional-mode claim with its row, in the caller's current
     * transaction (the one whose {@link #claimCompleted} wrote the row): it commits with the row
     * and the handler's own rows, or rolls back with them.
     *
     * @param claim the row returned by a {@code CLAIMED} result of {@link #claimCompleted}
     * @return {@code false} if the row is not the one this claim wrote
     * @since 0.1.0
     */
    boolean storeReply(ProcessedMessage claim, StoredReply reply);

    /**
     * The reply kept with a completed message ({@link #complete(ProcessedMessage, StoredReply)},
     * {@link #storeReply}). Always read from the store itself, never from a cache of completed
     * keys, and in the caller's transaction if it has one.
     *
     * @return the reply, or empty if the message is not completed or was completed without one
     *     (its handler returned nothing, or did not keep replies when it ran)
     * @since 0.1.0
     */
    Optional<StoredReply> findReply(String consumer, String messageId);

    /**
     * Releases a lease-mode claim after a failure: the lease ends now, so the next delivery of the
     * message claims it again (as attempt {@code attempts + 1}); {@code error} is kept as
     * {@code lastError}.
     *
     * @return {@code false} if the claim was no longer the caller's
     */
    default boolean release(ProcessedMessage claim, @Nullable String error) {
        return releaseAll(claim.consumer(), claim.claimToken(), List.of(claim.messageId()), error) == 1;
    }

    /**
     * Releases several claims of one consumer, taken with one token, in one round trip.
     *
     * @return how many rows were released
     */
    int releaseAll(String consumer, long claimToken, Collection<String> messageIds, @Nullable String error);

    /**
     * Gives back lease-mode claims whose handler <strong>never started</strong> (a batch or a poll
     * that stopped before them, a fingerprint rejected before the run), so that they count no
     * attempt: a claim that inserted the row deletes it (the next claim is a first claim again, with
     * a new {@code firstSeenAt}); a claim that took a row over restores the row's attempt count to
     * what it was before, keeps its {@code lastError} and {@code firstSeenAt}, and ends its lease
     * now, as {@link #releaseAll} does. Either way such a claim can never make a message look
     * uncertain (taken over long after its first claim) or raise its attempt count.
     *
     * <p>Fenced on {@code claimToken} like {@link #releaseAll}, and done at most once per claim: a
     * restored row is handed back with a new token that no caller holds, so a retry of this call
     * after an ambiguous failure (the statement committed, the answer was lost) restores nothing
     * twice. A crash before the call leaves the claim to lapse with its attempt counted: the store
     * cannot tell then whether the handler started, so it errs on the side of the attempt.
     *
     * <p>This default falls back to {@link #releaseAll} (the attempt stays counted) for stores that
     * cannot restore; the JDBC store implements it.
     *
     * @return how many claims were given back
     * @since 0.1.0
     */
    default int releaseUnrun(String consumer, long claimToken, Collection<String> messageIds) {
        return releaseAll(consumer, claimToken, messageIds, null);
    }

    /**
     * Extends a live lease-mode claim while its handler runs: its lease then ends {@code lease}
     * after the store's shared clock's now (the database's, for the JDBC store), as a new claim's
     * would. Fenced on the claim token and on the status {@code IN_PROGRESS}, as {@link #complete}
     * is: a claim that another consumer took over (a new token), that was completed, released and
     * taken again, or marked for reconciliation is not touched. A claim whose lease ended but that
     * nobody took over is still the caller's and is extended.
     *
     * @param claim the row returned by a {@code CLAIMED} result
     * @return {@code false} if the claim was no longer the caller's
     * @since 0.1.0
     */
    default boolean renew(ProcessedMessage claim, Duration lease) {
        return renewAll(claim.consumer(), claim.claimToken(), List.of(claim.messageId()), lease) == 1;
    }

    /**
     * Renews several claims of one consumer, taken with one token, in one round trip, as
     * {@link #renew} does for each (one statement: {@code UPDATE … WHERE claim_token = ? AND
     * status = 'IN_PROGRESS'}).
     *
     * @return how many claims were renewed; fewer than {@code messageIds} means some were no longer
     *     the caller's
     * @throws IllegalArgumentException if {@code lease} is not positive
     * @since 0.1.0
     */
    int renewAll(String consumer, long claimToken, Collection<String> messageIds, Duration lease);

    /**
     * Marks a lease-mode claim whose outcome is uncertain {@link MessageStatus#RECONCILE}: its lease
     * ends, it is never claimed again (claims answer {@code BUSY} with the row) and never pruned,
     * until an operator completes or deletes it. {@code reason} is kept as {@code lastError}.
     *
     * @param claim the row returned by a {@code CLAIMED} result
     * @return {@code false} if the claim was no longer the caller's
     * @since 0.1.0
     */
    boolean markForReconciliation(ProcessedMessage claim, @Nullable String reason);

    /**
     * Resolves a row held for reconciliation as done: an operator checked the provider and the
     * effect happened. The row becomes {@code COMPLETED} (processed now, by the store's shared
     * clock), so every later delivery of the message is a duplicate.
     *
     * @return {@code false} if there is no such row, or it is not {@code RECONCILE}
     * @since 0.1.0
     */
    boolean completeReconciled(String consumer, String messageId);

    /**
     * Resolves a row held for reconciliation for a retry: an operator checked the provider and the
     * effect did not happen. The row is deleted, so the next delivery of the message (a replay of
     * its dead letter) claims it as a new message and runs the handler.
     *
     * @return {@code false} if there is no such row, or it is not {@code RECONCILE}
     * @since 0.1.0
     */
    boolean releaseReconciled(String consumer, String messageId);

    /**
     * Reads one row.
     */
    Optional<ProcessedMessage> find(String consumer, String messageId);

    /**
     * Deletes at most {@code limit} rows the ledger is done with, in one short transaction:
     * {@code COMPLETED} rows processed before {@code cutoff}, and {@code IN_PROGRESS} rows whose
     * lease ended before {@code cutoff} (claims released after a failure and never taken again,
     * such as dead-lettered messages). Live claims (by the store's shared clock, whatever
     * {@code cutoff} says) and {@code RECONCILE} rows are never deleted.
     * Safe to call from several instances at once. Callers loop until it returns less than
     * {@code limit}.
     *
     * @return how many rows were deleted
     */
    int deleteCompletedBefore(Instant cutoff, int limit);

    /**
     * Per consumer, what an operator watches: the age of its oldest live claim and how many of its
     * rows are held for reconciliation. Consumers with neither are absent from the map. Meant for
     * gauges read every few seconds: one cheap read of the live claims and held rows (never a scan
     * of completed rows, where the database can avoid it), not for the hot path.
     *
     * @return the stats by consumer name
     * @since 0.1.0
     */
    Map<String, ConsumerLedgerStats> consumerStats();
}
