package io.sumi.store;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import org.jspecify.annotations.Nullable;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * A {@link ProcessedMessageStore} that remembers completed messages in a Caffeine cache, so a
 * redelivery of a message this instance has seen completed costs no database round trip.
 *
 * <p>The commit rule: the cache remembers only completions known to be committed, because it
 * answers {@code DUPLICATE} without asking the ledger, for as long as an entry lives. What enters:
 * <ul>
 *   <li>a {@code DUPLICATE} answered by a lease-mode claim ({@link #claim}, {@link #claimAll}):
 *   the delegate runs it on a connection of its own, outside the caller's transaction, so the row
 *   it found is committed;</li>
 *   <li>a lease-mode {@link #complete} / {@link #completeAll}, which commits on its own connection;</li>
 *   <li>anything a transactional-mode claim ({@link #claimCompleted}, {@link #claimAllCompleted})
 *   answered, {@code CLAIMED} or {@code DUPLICATE}, but only after the caller's transaction has
 *   committed (a Spring transaction synchronization; without one, nothing is remembered). Inside
 *   the caller's transaction a {@code DUPLICATE} may be the caller's own uncommitted row (the same
 *   key claimed twice in one transaction); remembering it at once would make the key look done
 *   for the entry's lifetime after a rollback, although the ledger has no row.</li>
 * </ul>
 * A rolled-back claim therefore never makes a message look done. Entries expire after
 * {@code expireAfterWrite}, which should not exceed the ledger's retention. Thread-safe.
 */
public final class CachingProcessedMessageStore extends ForwardingProcessedMessageStore {

    /** Default number of completed keys remembered. */
    public static final long DEFAULT_MAXIMUM_SIZE = 100_000;

    /** Default time a completed key is remembered. */
    public static final Duration DEFAULT_EXPIRE_AFTER_WRITE = Duration.ofHours(1);

    private record Key(String consumer, String messageId) {}

    private final Cache<Key, ProcessedMessage> completed;

    /**
     * Wraps {@code delegate} with a cache of at most {@code maximumSize} completed keys, each kept
     * for {@code expireAfterWrite}.
     */
    public CachingProcessedMessageStore(ProcessedMessageStore delegate, long maximumSize, Duration expireAfterWrite) {
        super(delegate);
        this.completed = Caffeine.newBuilder()
                .maximumSize(maximumSize)
                .expireAfterWrite(expireAfterWrite)
                .build();
    }

    @Override
    public ClaimResult claim(String consumer, ClaimRequest request, Duration lease) {
        return claimAll(consumer, List.of(request), lease).get(0);
    }

    @Override
    public ClaimResult claimCompleted(String consumer, ClaimRequest request) {
        return claimAllCompleted(consumer, List.of(request)).get(0);
    }

    @Override
    public List<ClaimResult> claimAll(String consumer, List<ClaimRequest> requests, Duration lease) {
        return claim(consumer, requests, false, misses -> delegate().claimAll(consumer, misses, lease));
    }

    @Override
    public List<ClaimResult> claimAllCompleted(String consumer, List<ClaimRequest> requests) {
        return claim(consumer, requests, true, misses -> delegate().claimAllCompleted(consumer, misses));
    }

    /**
     * @param inCallerTransaction whether the claim ran in the caller's transaction, so that what it
     *     saw (even a {@code DUPLICATE}) may be uncommitted
     */
    private List<ClaimResult> claim(
            String consumer,
            List<ClaimRequest> requests,
            boolean inCallerTransaction,
            java.util.function.Function<List<ClaimRequest>, List<ClaimResult>> claimer) {
        ClaimResult[] results = new ClaimResult[requests.size()];
        List<ClaimRequest> misses = new ArrayList<>(requests.size());
        List<Integer> missIndexes = new ArrayList<>(requests.size());
        for (int i = 0; i < requests.size(); i++) {
            ProcessedMessage hit =
                    completed.getIfPresent(new Key(consumer, requests.get(i).messageId()));
            if (hit != null) {
                results[i] = new ClaimResult(ClaimOutcome.DUPLICATE, hit);
            } else {
                misses.add(requests.get(i));
                missIndexes.add(i);
            }
        }
        if (!misses.isEmpty()) {
            List<ClaimResult> claimed = claimer.apply(misses);
            List<ProcessedMessage> completedRows = new ArrayList<>(claimed.size());
            for (int i = 0; i < claimed.size(); i++) {
                ClaimResult result = claimed.get(i);
                results[missIndexes.get(i)] = result;
                if (result.outcome() != ClaimOutcome.BUSY && result.message().isCompleted()) {
                    completedRows.add(result.message());
                }
            }
            if (inCallerTransaction) {
                rememberAfterCommit(completedRows);
            } else {
                completedRows.forEach(this::remember);
            }
        }
        return List.of(results);
    }

    @Override
    public int completeAll(String consumer, long claimToken, Collection<String> messageIds) {
        int count = delegate().completeAll(consumer, claimToken, messageIds);
        if (count == messageIds.size()) {
            // Every row was ours and is now committed COMPLETED. When some were not (a lease taken
            // over), we cannot tell which from the count, so we cache none of them.
            Instant now = Instant.now();
            for (String messageId : messageIds) {
                remember(new ProcessedMessage(
                        consumer, messageId, MessageStatus.COMPLETED, claimToken, null, 0, null, null, now, now));
            }
        }
        return count;
    }

    @Override
    public boolean complete(ProcessedMessage claim) {
        return complete(claim, null);
    }

    /**
     * Completes through the delegate and remembers the key. The reply is not cached: a cached
     * {@code DUPLICATE} still reads it with {@link #findReply}, which always asks the delegate.
     */
    @Override
    public boolean complete(ProcessedMessage claim, @Nullable StoredReply reply) {
        boolean completedNow =
                reply == null ? delegate().complete(claim) : delegate().complete(claim, reply);
        if (completedNow) {
            remember(new ProcessedMessage(
                    claim.consumer(),
                    claim.messageId(),
                    MessageStatus.COMPLETED,
                    claim.claimToken(),
                    null,
                    claim.attempts(),
                    claim.fingerprint(),
                    null,
                    claim.firstSeenAt(),
                    Instant.now()));
        }
        return completedNow;
    }

    /** How many completed keys the cache holds now (approximate). */
    public long size() {
        return completed.estimatedSize();
    }

    private void remember(ProcessedMessage message) {
        completed.put(new Key(message.consumer(), message.messageId()), message);
    }

    private void rememberAfterCommit(List<ProcessedMessage> messages) {
        if (!messages.isEmpty() && TransactionSynchronizationManager.isSynchronizationActive()) {
            TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
                @Override
                public void afterCommit() {
                    messages.forEach(CachingProcessedMessageStore.this::remember);
                }
            });
        }
        // Without synchronization we cannot know when (or whether) the rows commit: do not cache.
    }
}
