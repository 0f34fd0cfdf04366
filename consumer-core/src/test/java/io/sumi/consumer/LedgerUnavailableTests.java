package io.sumi.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

import io.sumi.consumer.exception.BatchFailedException;
import io.sumi.consumer.exception.LedgerUnavailableException;
import io.sumi.consumer.exception.Verdict;
import io.sumi.store.ClaimRequest;
import io.sumi.store.ClaimResult;
import io.sumi.store.ForwardingProcessedMessageStore;
import io.sumi.store.ProcessedMessageStore;
import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;
import org.springframework.dao.DataIntegrityViolationException;
import org.springframework.dao.TransientDataAccessResourceException;
import org.springframework.jdbc.CannotGetJdbcConnectionException;

/**
 * A ledger call of Sumi's that fails because the ledger's database is unreachable raises
 * {@link LedgerUnavailableException} (verdict {@link Verdict#LEDGER_UNAVAILABLE}: the binders hold
 * the message in place instead of spending the broker's redelivery budget); nothing else does. The
 * negative controls: the handler's own exceptions, with a connection failure of the handler's own
 * database inside, propagate unchanged; a ledger failure that is not an outage keeps its type.
 */
class LedgerUnavailableTests extends H2ExecutorTestSupport {

    /** A ledger whose claims (single and batch) throw what {@link #claimFailure} gives, while it is set. */
    static final class RefusingStore extends ForwardingProcessedMessageStore {
        volatile Supplier<RuntimeException> claimFailure;

        RefusingStore(ProcessedMessageStore delegate) {
            super(delegate);
        }

        @Override
        public ClaimResult claim(String consumer, ClaimRequest request, Duration lease) {
            if (claimFailure != null) {
                throw claimFailure.get();
            }
            return super.claim(consumer, request, lease);
        }

        @Override
        public List<ClaimResult> claimAll(String consumer, List<ClaimRequest> requests, Duration lease) {
            if (claimFailure != null) {
                throw claimFailure.get();
            }
            return super.claimAll(consumer, requests, lease);
        }
    }

    private static SQLTransientConnectionException connectionLost() {
        return new SQLTransientConnectionException("connection lost", "08006");
    }

    private IdempotentExecutor executorOn(ProcessedMessageStore ledger) {
        return IdempotentExecutor.builder(ledger).meterRegistry(meters).build();
    }

    @Test
    void aClaimRefusedForAConnectionFailureIsLedgerUnavailableAndTheHandlerDoesNotRun() {
        RefusingStore refusing = new RefusingStore(store);
        refusing.claimFailure = () -> new TransientDataAccessResourceException("ledger claim", connectionLost());
        AtomicInteger runs = new AtomicInteger();

        Throwable thrown =
                catchThrowable(() -> executorOn(refusing).execute(lease(), message("a"), () -> runs.incrementAndGet()));

        assertThat(thrown).isInstanceOf(LedgerUnavailableException.class);
        assertThat(((LedgerUnavailableException) thrown).call()).isEqualTo("claim");
        assertThat(((LedgerUnavailableException) thrown).isRetryable()).isTrue();
        assertThat(Verdict.of(Verdict.find(thrown))).isEqualTo(Verdict.LEDGER_UNAVAILABLE);
        assertThat(runs).hasValue(0);
        assertThat(meters.get("sumi.ledger.unavailable")
                        .tag("consumer", consumer)
                        .tag("call", "claim")
                        .counter()
                        .count())
                .isEqualTo(1.0);

        // Once the ledger answers, the same message runs.
        refusing.claimFailure = null;
        assertThat(catchThrowable(
                        () -> executorOn(refusing).execute(lease(), message("a"), () -> runs.incrementAndGet())))
                .isNull();
        assertThat(runs).hasValue(1);
    }

    @Test
    void everyConnectionClassFailureOfAClaimIsAnOutage() throws Exception {
        List<Supplier<RuntimeException>> outages = List.of(
                () -> new CannotGetJdbcConnectionException("pool exhausted", connectionLost()),
                () -> new TransientDataAccessResourceException("no cause"),
                () -> new org.springframework.dao.DataAccessResourceFailureException("refused"),
                () -> new org.springframework.jdbc.UncategorizedSQLException(
                        "ledger claim", "INSERT", new SQLException("server closed the connection", "08003")));
        RefusingStore refusing = new RefusingStore(store);
        for (Supplier<RuntimeException> outage : outages) {
            refusing.claimFailure = outage;
            assertThat(catchThrowable(() -> executorOn(refusing).execute(lease(), message("a"), () -> null)))
                    .as("%s", outage.get())
                    .isInstanceOf(LedgerUnavailableException.class);
        }
    }

    @Test
    void aLedgerFailureThatIsNotAnOutageKeepsItsType() {
        RefusingStore refusing = new RefusingStore(store);
        DataIntegrityViolationException violation = new DataIntegrityViolationException("value too long");
        refusing.claimFailure = () -> violation;

        assertThatThrownBy(() -> executorOn(refusing).execute(lease(), message("a"), () -> null))
                .isSameAs(violation);
        assertThat(Verdict.find(violation)).isNull();
    }

    /** The negative control: the handler's own connection failure is the handler's, not the ledger's. */
    @Test
    void aHandlerFailureWithAConnectionFailureInsideIsNotLedgerUnavailable() {
        RuntimeException handlersOwn = new IllegalStateException("the handler's database is down", connectionLost());
        TransientDataAccessResourceException springWrapped =
                new TransientDataAccessResourceException("handler's query", connectionLost());

        for (RuntimeException failure : List.of(handlersOwn, springWrapped)) {
            for (HandlerDefinition handler : List.of(lease(), transactional())) {
                Throwable thrown = catchThrowable(
                        () -> executor.execute(handler, message("h-" + failure.hashCode() + handler.mode()), () -> {
                            throw failure;
                        }));
                assertThat(thrown).as("%s in %s mode", failure, handler.mode()).isSameAs(failure);
                assertThat(Verdict.find(thrown)).isNull();
            }
            Throwable batch = catchThrowable(() -> executor.executeBatch(
                    lease(),
                    List.of(message("b1-" + failure.hashCode()), message("b2-" + failure.hashCode())),
                    indexes -> {
                        throw failure;
                    }));
            assertThat(batch).as("a batch handler's %s", failure).isSameAs(failure);
        }
        // Registered at 0 with the consumer's first message; none counted.
        assertThat(meters.find("sumi.ledger.unavailable").counters())
                .allSatisfy(counter -> assertThat(counter.count()).isZero());
    }

    @Test
    void aBatchWhoseClaimIsRefusedStopsAtItsFirstMessage() {
        RefusingStore refusing = new RefusingStore(store);
        refusing.claimFailure = () -> new TransientDataAccessResourceException("ledger claim", connectionLost());
        AtomicInteger runs = new AtomicInteger();

        Throwable thrown = catchThrowable(() -> executorOn(refusing)
                .executeBatch(lease(), List.of(message("a"), message("b")), indexes -> runs.incrementAndGet()));

        assertThat(thrown).isInstanceOf(BatchFailedException.class);
        assertThat(((BatchFailedException) thrown).index()).isZero();
        assertThat(thrown.getCause()).isInstanceOf(LedgerUnavailableException.class);
        assertThat(Verdict.of(((BatchFailedException) thrown).getCause())).isEqualTo(Verdict.LEDGER_UNAVAILABLE);
        assertThat(runs).hasValue(0);
    }

    @Test
    void aBatchWhoseCompletionAndReleaseAreRefusedStopsAtItsFirstMessage() {
        FailingOnceStore failing = new FailingOnceStore(store);
        // Completed twice (once more on failure), then released twice: all refused.
        IdempotentExecutor refusing = executorOn(new ForwardingProcessedMessageStore(failing) {
            @Override
            public int completeAll(String consumer, long claimToken, java.util.Collection<String> messageIds) {
                throw new TransientDataAccessResourceException("ledger complete", connectionLost());
            }

            @Override
            public int releaseAll(
                    String consumer, long claimToken, java.util.Collection<String> messageIds, String error) {
                throw new TransientDataAccessResourceException("ledger release", connectionLost());
            }
        });

        Throwable thrown = catchThrowable(
                () -> refusing.executeBatch(lease(), List.of(message("a"), message("b")), indexes -> {}));

        assertThat(thrown).isInstanceOf(BatchFailedException.class);
        assertThat(((BatchFailedException) thrown).index()).isZero();
        assertThat(thrown.getCause()).isInstanceOf(LedgerUnavailableException.class);
        assertThat(((LedgerUnavailableException) thrown.getCause()).call()).isEqualTo("complete");
    }
}
