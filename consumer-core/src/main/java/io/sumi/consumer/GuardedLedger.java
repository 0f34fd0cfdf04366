package io.sumi.consumer;

import io.sumi.consumer.exception.Causes;
import io.sumi.consumer.exception.LedgerUnavailableException;
import io.sumi.jdbc.internal.TransientSqlErrors;
import io.sumi.store.ClaimRequest;
import io.sumi.store.ClaimResult;
import io.sumi.store.ForwardingProcessedMessageStore;
import io.sumi.store.ProcessedMessage;
import io.sumi.store.ProcessedMessageStore;
import io.sumi.store.StoredReply;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.springframework.dao.DataAccessResourceFailureException;
import org.springframework.dao.TransientDataAccessResourceException;
import org.springframework.transaction.CannotCreateTransactionException;

/**
 * The ledger as the executor's message paths see it: every call that claims, completes, releases
 * or reads a message's row raises a {@link LedgerUnavailableException} instead of the store's own
 * exception when it failed because the ledger's database could not be reached
 * ({@link #isOutage}), so that the binders hold the message in place rather than spend the
 * broker's redelivery budget on it. This is the one place that decides it, and it wraps only
 * Sumi's own ledger statements: the handler never runs inside a store call, so an exception the
 * handler throws (whatever its cause) never passes here and is never reclassified.
 *
 * <p>Each translated failure is counted ({@code sumi.ledger.unavailable}) and logged at WARN, at
 * most once per {@link #WARN_EVERY} and consumer (an outage fails every message).
 *
 * <p>Lease renewal uses the store directly: a failed renewal is retried at its next tick and
 * counted by the renewer itself.
 */
final class GuardedLedger extends ForwardingProcessedMessageStore {

    /** The least time between two WARN lines of one consumer about an unreachable ledger. */
    static final Duration WARN_EVERY = Duration.ofSeconds(30);

    // The calls, the {@code call} tag of sumi.ledger.unavailable (listed in the README's metrics table).
    static final String CLAIM = "claim";
    static final String COMPLETE = "complete";
    static final String RELEASE = "release";
    static final String READ = "read";
    static final String MARK_FOR_RECONCILIATION = "mark for reconciliation";

    /** Every {@code call} tag value, registered at 0 with a consumer's first message. */
    static final List<String> CALLS = List.of(CLAIM, COMPLETE, RELEASE, READ, MARK_FOR_RECONCILIATION);

    private final OutcomeRecorder recorder;

    GuardedLedger(ProcessedMessageStore delegate, OutcomeRecorder recorder) {
        super(delegate);
        this.recorder = recorder;
    }

    /**
     * Whether {@code failure} says the ledger's database could not be reached, so that the same
     * call may succeed once it is back: a connection failure anywhere in the cause chain (SQLSTATE
     * class {@code 08}, the JDBC connection exception types, a socket error), or Spring's
     * resource-failure translations of one ({@link DataAccessResourceFailureException}, which
     * includes {@code CannotGetJdbcConnectionException}, {@link TransientDataAccessResourceException},
     * {@link CannotCreateTransactionException}). Lock conflicts, constraint violations, data and
     * syntax errors are not outages: they keep their ordinary treatment.
     */
    static boolean isOutage(@Nullable Throwable failure) {
        if (failure == null) {
            return false;
        }
        for (Throwable t : Causes.chain(failure)) {
            if (t instanceof DataAccessResourceFailureException
                    || t instanceof TransientDataAccessResourceException
                    || t instanceof CannotCreateTransactionException) {
                return true;
            }
        }
        return TransientSqlErrors.isConnectionFailure(failure);
    }

    private <T> T guard(String consumer, String call, Supplier<T> work) {
        try {
            return work.get();
        } catch (LedgerUnavailableException ex) {
            throw ex;
        } catch (RuntimeException ex) {
            if (!isOutage(ex)) {
                throw ex;
            }
            LedgerUnavailableException unavailable = new LedgerUnavailableException(consumer, call, ex);
            recorder.ledgerUnavailable(consumer, call, unavailable);
            throw unavailable;
        }
    }

    @Override
    public ClaimResult claim(String consumer, ClaimRequest request, Duration lease) {
        return guard(consumer, CLAIM, () -> super.claim(consumer, request, lease));
    }

    @Override
    public List<ClaimResult> claimAll(String consumer, List<ClaimRequest> requests, Duration lease) {
        return guard(consumer, CLAIM, () -> super.claimAll(consumer, requests, lease));
    }

    @Override
    public ClaimResult claimCompleted(String consumer, ClaimRequest request) {
        return guard(consumer, CLAIM, () -> super.claimCompleted(consumer, request));
    }

    @Override
    public List<ClaimResult> claimAllCompleted(String consumer, List<ClaimRequest> requests) {
        return guard(consumer, CLAIM, () -> super.claimAllCompleted(consumer, requests));
    }

    @Override
    public boolean complete(ProcessedMessage claim) {
        return guard(claim.consumer(), COMPLETE, () -> super.complete(claim));
    }

    @Override
    public boolean complete(ProcessedMessage claim, @Nullable StoredReply reply) {
        return guard(claim.consumer(), COMPLETE, () -> super.complete(claim, reply));
    }

    @Override
    public int completeAll(String consumer, long claimToken, Collection<String> messageIds) {
        return guard(consumer, COMPLETE, () -> super.completeAll(consumer, claimToken, messageIds));
    }

    @Override
    public Optional<StoredReply> findReply(String consumer, String messageId) {
        return guard(consumer, READ, () -> super.findReply(consumer, messageId));
    }

    @Override
    public boolean release(ProcessedMessage claim, @Nullable String error) {
        return guard(claim.consumer(), RELEASE, () -> super.release(claim, error));
    }

    @Override
    public int releaseAll(String consumer, long claimToken, Collection<String> messageIds, @Nullable String error) {
        return guard(consumer, RELEASE, () -> super.releaseAll(consumer, claimToken, messageIds, error));
    }

    @Override
    public int releaseUnrun(String consumer, long claimToken, Collection<String> messageIds) {
        return guard(consumer, RELEASE, () -> super.releaseUnrun(consumer, claimToken, messageIds));
    }

    @Override
    public boolean markForReconciliation(ProcessedMessage claim, @Nullable String reason) {
        return guard(claim.consumer(), MARK_FOR_RECONCILIATION, () -> super.markForReconciliation(claim, reason));
    }

    @Override
    public Optional<ProcessedMessage> find(String consumer, String messageId) {
        return guard(consumer, READ, () -> super.find(consumer, messageId));
    }
}
