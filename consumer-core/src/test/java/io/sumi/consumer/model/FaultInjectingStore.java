package io.sumi.consumer.model;

import io.sumi.store.ClaimRequest;
import io.sumi.store.ClaimResult;
import io.sumi.store.ForwardingProcessedMessageStore;
import io.sumi.store.ProcessedMessage;
import io.sumi.store.ProcessedMessageStore;
import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.jspecify.annotations.Nullable;
import org.springframework.dao.TransientDataAccessResourceException;

/**
 * The ledger as one instance (one "JVM") sees it, with faults on demand:
 * <ul>
 *   <li>a crash at a chosen call: the call throws {@link Crash} before it reaches the database,
 *   and from then on every call does, so the dead instance never releases or completes anything
 *   (its claims stay leased, as after {@code kill -9});</li>
 *   <li>a store error at a chosen call, once or until disarmed (the database hiccups or is
 *   unreachable; the instance lives on), with the ids that call was about;</li>
 *   <li>frozen lease renewal: while the instance is frozen (a long GC pause), none of its
 *   renewals reaches the ledger; a dead instance never renews again.</li>
 * </ul>
 */
final class FaultInjectingStore extends ForwardingProcessedMessageStore {

    enum Point {
        CLAIM,
        COMPLETE,
        RELEASE,
        /** A lease renewal (from the executor's renewal thread, never the handler's). */
        RENEW
    }

    /** The JVM is gone: thrown through the executor, never caught by it. */
    static final class Crash extends Error {
        Crash(String where) {
            super("simulated crash " + where, null, false, false);
        }
    }

    /** The injected store error. */
    static final class InjectedStoreError extends TransientDataAccessResourceException {
        InjectedStoreError(Point point) {
            super("injected ledger failure at " + point);
        }
    }

    private volatile @Nullable Point crashAt;
    private volatile @Nullable Point failAt;
    private volatile boolean failAlways;
    private volatile boolean dead;
    private volatile boolean frozen;
    private volatile @Nullable InjectedStoreError injected;
    private volatile Set<String> failedIds = Set.of();

    FaultInjectingStore(ProcessedMessageStore delegate) {
        super(delegate);
    }

    void crashAt(@Nullable Point point) {
        this.crashAt = point;
    }

    void failOnceAt(@Nullable Point point) {
        this.failAt = point;
        this.failAlways = false;
    }

    /** Every call at {@code point} fails until disarmed (the database is unreachable for that call). */
    void failAlwaysAt(Point point) {
        this.failAt = point;
        this.failAlways = true;
    }

    /** Kills the instance now (a crash inside the handler). */
    Crash die(String where) {
        dead = true;
        return new Crash(where);
    }

    boolean dead() {
        return dead;
    }

    /** While frozen, the instance's lease renewals do not reach the ledger (its threads are stopped). */
    void freeze(boolean frozen) {
        this.frozen = frozen;
    }

    /** Forgets the error injected during an earlier delivery. */
    void clearInjected() {
        injected = null;
        failedIds = Set.of();
    }

    /** The error injected by {@link #failOnceAt}, if it fired. */
    @Nullable
    InjectedStoreError injected() {
        return injected;
    }

    /** The ids of the call that failed with the injected error. */
    Set<String> failedIds() {
        return failedIds;
    }

    private void before(Point point, Collection<String> ids) {
        if (dead) {
            throw new Crash("(already dead) at " + point);
        }
        if (crashAt == point) {
            throw die("at " + point);
        }
        if (failAt == point) {
            if (!failAlways) {
                failAt = null;
            }
            failedIds = Set.copyOf(ids);
            InjectedStoreError error = new InjectedStoreError(point);
            injected = error;
            throw error;
        }
    }

    private static List<String> ids(List<ClaimRequest> requests) {
        return requests.stream().map(ClaimRequest::messageId).toList();
    }

    @Override
    public ClaimResult claim(String consumer, ClaimRequest request, Duration lease) {
        before(Point.CLAIM, List.of(request.messageId()));
        return super.claim(consumer, request, lease);
    }

    @Override
    public List<ClaimResult> claimAll(String consumer, List<ClaimRequest> requests, Duration lease) {
        before(Point.CLAIM, ids(requests));
        return super.claimAll(consumer, requests, lease);
    }

    @Override
    public ClaimResult claimCompleted(String consumer, ClaimRequest request) {
        before(Point.CLAIM, List.of(request.messageId()));
        return super.claimCompleted(consumer, request);
    }

    @Override
    public List<ClaimResult> claimAllCompleted(String consumer, List<ClaimRequest> requests) {
        before(Point.CLAIM, ids(requests));
        return super.claimAllCompleted(consumer, requests);
    }

    @Override
    public boolean complete(ProcessedMessage claim) {
        before(Point.COMPLETE, List.of(claim.messageId()));
        return super.complete(claim);
    }

    @Override
    public int completeAll(String consumer, long claimToken, Collection<String> messageIds) {
        before(Point.COMPLETE, messageIds);
        return super.completeAll(consumer, claimToken, messageIds);
    }

    @Override
    public boolean release(ProcessedMessage claim, @Nullable String error) {
        before(Point.RELEASE, List.of(claim.messageId()));
        return super.release(claim, error);
    }

    @Override
    public int releaseAll(String consumer, long claimToken, Collection<String> messageIds, @Nullable String error) {
        before(Point.RELEASE, messageIds);
        return super.releaseAll(consumer, claimToken, messageIds, error);
    }

    @Override
    public int releaseUnrun(String consumer, long claimToken, Collection<String> messageIds) {
        before(Point.RELEASE, messageIds);
        return super.releaseUnrun(consumer, claimToken, messageIds);
    }

    @Override
    public int renewAll(String consumer, long claimToken, Collection<String> messageIds, Duration lease) {
        if (dead) {
            throw new Crash("(already dead) at renewAll");
        }
        if (frozen) {
            // The renewal thread of a frozen JVM does not run: the ledger sees nothing.
            throw new InjectedStoreError(Point.RENEW);
        }
        return super.renewAll(consumer, claimToken, messageIds, lease);
    }

    @Override
    public boolean markForReconciliation(ProcessedMessage claim, @Nullable String reason) {
        if (dead) {
            throw new Crash("(already dead) at markForReconciliation");
        }
        return super.markForReconciliation(claim, reason);
    }

    @Override
    public Optional<ProcessedMessage> find(String consumer, String messageId) {
        if (dead) {
            throw new Crash("(already dead) at find");
        }
        return super.find(consumer, messageId);
    }

    @Override
    public int deleteCompletedBefore(Instant cutoff, int limit) {
        if (dead) {
            throw new Crash("(already dead) at deleteCompletedBefore");
        }
        return super.deleteCompletedBefore(cutoff, limit);
    }
}
