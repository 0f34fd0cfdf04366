package io.sumi.consumer;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import io.micrometer.observation.ObservationRegistry;
import io.sumi.consumer.exception.BatchFailedException;
import io.sumi.consumer.exception.IdempotencyException;
import io.sumi.consumer.exception.InvalidIdempotencyKeyException;
import io.sumi.consumer.exception.MessageBusyException;
import io.sumi.consumer.exception.MissingIdempotencyKeyException;
import io.sumi.consumer.exception.ReconciliationRequiredException;
import io.sumi.store.ProcessedMessageStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;

/**
 * Runs handlers idempotently: resolves each message's key, claims it in the ledger, runs the
 * handler, and completes or releases the claim. Framework-free; binders call it from their
 * listener adapters.
 *
 * <p>The state machine, per message (see {@link IdempotencyMode}):
 * <ul>
 *   <li>lease: claim → {@code CLAIMED}: run, then complete; on an exception release the claim and
 *   rethrow the exception unchanged. {@code DUPLICATE}: skip. {@code BUSY}: throw
 *   {@link MessageBusyException} (retryable).</li>
 *   <li>transactional: in a transaction, insert the row {@code COMPLETED} → {@code CLAIMED}: run;
 *   commit or roll back both. {@code DUPLICATE}: skip. {@code BUSY}: {@link MessageBusyException}.</li>
 * </ul>
 * A message without a usable key throws {@link MissingIdempotencyKeyException} or
 * {@link InvalidIdempotencyKeyException} before anything is claimed. Exceptions of the handler are
 * never swallowed. Thread-safe.
 */
public interface IdempotentExecutor extends AutoCloseable {

    /**
     * Runs {@code body} for one message unless its key is already completed.
     *
     * @return {@code PROCESSED} with the handler's value, or {@code DUPLICATE}
     * @throws Exception whatever the handler threw (after its claim was released or rolled back),
     *     or an {@link IdempotencyException} about the message
     */
    <T> HandlerResult<T> execute(HandlerDefinition handler, InboundMessage message, HandlerBody<T> body)
            throws Exception;

    /**
     * Runs a handler that keeps its replies ({@link HandlerDefinition#storeReply()}) for one
     * message, as {@link #execute} does, and keeps the reply with the ledger row.
     *
     * <p>{@code body} runs the handler and returns its reply and the reply's encoded form
     * ({@link HandlerReply#of}), or {@code null} for no reply. The encoded form is written by the
     * statement that completes the row (lease mode) or in the handler's transaction (transactional
     * mode): a completed row of such a handler never lacks its reply. One larger than
     * {@link HandlerDefinition#maxReplySize()} fails the message with a
     * {@link io.sumi.consumer.exception.ReplyTooLargeException} (not retryable), handled as a
     * failure of the handler: released or rolled back, never completed.
     *
     * <p>The result: {@code PROCESSED} with the body's value; {@code DUPLICATE} with
     * {@link HandlerReply#stored(io.sumi.store.StoredReply)} of the reply kept with the row, or a
     * {@code null} value if the row has none (completed before the handler kept replies, or it
     * returned none). A live claim elsewhere is a {@link MessageBusyException} as always: no reply
     * exists yet.
     *
     * @throws IllegalArgumentException if {@code handler} does not keep replies
     * @throws UnsupportedOperationException (from the store) if the ledger cannot keep replies
     * @since 0.1.0
     */
    default HandlerResult<HandlerReply> executeReplying(
            HandlerDefinition handler, InboundMessage message, HandlerBody<HandlerReply> body) throws Exception {
        if (!handler.storeReply()) {
            throw new IllegalArgumentException(
                    "The handler of consumer '" + handler.consumer() + "' does not keep replies (storeReply)");
        }
        // The executor reads storeReply from the definition; decorators forward execute unchanged.
        return execute(handler, message, body);
    }

    /**
     * Runs an asynchronous handler for one message ({@link ListenerReturnTypes}): as
     * {@link #execute}, but the message is done when the future {@code body} returns completes,
     * not when {@code body} returns.
     *
     * <p>The key is claimed and {@code body} runs on the calling thread ({@link IdempotencyContext}
     * is current while it runs, not in the future's callbacks); a refusal before the handler runs
     * (a live claim elsewhere, no usable key, a rejected fingerprint) and an exception {@code body}
     * throws are thrown by this call, as by {@link #execute}. Otherwise the returned future
     * completes after the ledger has followed the handler's future: when it succeeds, the row is
     * completed first and then the returned future completes {@code PROCESSED} with its value; when
     * it fails, the claim is released (or rolled back) first and then the returned future fails
     * with the same exception, unwrapped from a {@link java.util.concurrent.CompletionException}.
     * A lease-mode claim is renewed until the handler's future completes (up to the handler's max
     * run time). A duplicate returns a completed future ({@code DUPLICATE}). A {@code null} future
     * counts as one completed with {@code null}.
     *
     * <p>A listener container must acknowledge the message only when the returned future succeeds
     * (Spring Kafka and Spring AMQP do for listeners returning one), so that the acknowledgement
     * always comes after the completion.
     *
     * <p>This default waits on the calling thread for the handler's future inside {@link #execute}
     * (which is how transactional mode and decorators that hold something per thread run it, such
     * as sumi-budgets' budgeted handlers: the transaction or the budget permit is the calling
     * thread's): the transaction commits, or the row is completed, only after
     * the future succeeded; a failed future rolls back or releases, and fails the returned future.
     *
     * @throws Exception as {@link #execute}, for what happens before the handler's future exists
     * @since 0.1.0
     */
    default <T> CompletableFuture<HandlerResult<T>> executeAsync(
            HandlerDefinition handler, InboundMessage message, HandlerBody<CompletionStage<T>> body) throws Exception {
        // The future's failure ends the returned future, as it does where the executor does not wait.
        Exception[] futureFailure = new Exception[1];
        try {
            return CompletableFuture.completedFuture(execute(handler, message, () -> {
                CompletionStage<T> stage = body.run();
                try {
                    return await(stage);
                } catch (Exception ex) {
                    futureFailure[0] = ex;
                    throw ex;
                }
            }));
        } catch (Exception ex) {
            if (ex == futureFailure[0]) {
                return CompletableFuture.failedFuture(ex);
            }
            throw ex;
        }
    }

    /**
     * Waits for {@code stage} and returns its value, or throws its failure unwrapped.
     *
     * @since 0.1.0
     */
    static <T> @Nullable T await(@Nullable CompletionStage<T> stage) throws Exception {
        if (stage == null) {
            return null;
        }
        try {
            return stage.toCompletableFuture().get();
        } catch (ExecutionException ex) {
            throw rethrowable(ex.getCause() != null ? ex.getCause() : ex);
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw ex;
        }
    }

    /**
     * {@code failure} unwrapped from the {@link java.util.concurrent.CompletionException}s a
     * future's callbacks see, as an {@link Exception} to throw (an {@link Error} is thrown here).
     *
     * @since 0.1.0
     */
    static Exception rethrowable(Throwable failure) {
        Throwable cause = failure;
        while ((cause instanceof CompletionException || cause instanceof ExecutionException)
                && cause.getCause() != null) {
            cause = cause.getCause();
        }
        if (cause instanceof Error error) {
            throw error;
        }
        return cause instanceof Exception ex ? ex : new IllegalStateException(cause);
    }

    /**
     * Runs {@code body} once for the messages of a batch that are not completed yet, claiming the
     * whole batch in one round trip. In lease mode every claim the call took is completed or
     * released however it ends (a failing ledger call is tried once more before the error goes on).
     *
     * <p>When a message of the batch cannot run (no usable key, a live claim elsewhere, a rejected
     * fingerprint) or the handler reports one with a {@link BatchFailedException}, the messages
     * before it are completed (in transactional mode: the handler is run again for just those, in
     * a new transaction, since the failed transaction rolled their rows back), and a
     * {@link BatchFailedException} with its index is thrown: it and the messages after it must be
     * delivered again. If completing the messages before it fails in the ledger, the ledger's
     * exception is thrown instead (the handler's {@link BatchFailedException} suppressed in it):
     * nothing of the batch is done, and all of it must be delivered again. Any other exception of
     * the handler fails the whole batch. In transactional
     * mode inside a transaction of the caller's that the ledger's DataSource takes part in, which
     * the executor joins (a transaction of another resource, such as the listener container's
     * Kafka transaction, is not joined: the executor opens its own), a message that stops the
     * batch while it runs (a live claim, a rejected fingerprint, a {@link BatchFailedException} of
     * the handler) marks that transaction rollback-only, so no message of the batch can be done: the
     * {@link BatchFailedException} then has index 0 and the stopping message's failure as its cause.
     *
     * @throws BatchFailedException if the batch stopped at a message
     * @throws IllegalArgumentException if the handler keeps replies ({@link HandlerDefinition#storeReply()}),
     *     which only single messages can
     * @throws Exception whatever the handler threw, for the whole batch
     */
    BatchResult executeBatch(HandlerDefinition handler, List<? extends InboundMessage> messages, BatchBody body)
            throws Exception;

    /**
     * Claims, in lease mode and in one round trip, every message a listener container has fetched
     * and is about to dispatch one by one (a Kafka poll), so that each then runs against its claim
     * and the completions are written together ({@link PollClaim}).
     *
     * @return the claims, or {@code null} when the handler does not run in lease mode here, keeps
     *     its replies (each reply is written with its own completion, which a poll claim defers), or
     *     the executor does not support it: the caller then runs each message through {@link #execute}
     * @since 0.1.0
     */
    default @Nullable PollClaim claimPoll(HandlerDefinition handler, List<? extends InboundMessage> messages) {
        return null;
    }

    /** The key resolver the executor uses. */
    MessageKeyResolver keyResolver();

    /**
     * Stops what the executor runs in the background: the renewal of the leases of running
     * lease-mode handlers. Handlers still running then keep their claims only until their leases
     * run out, as if this JVM had died. Idempotent; the executor is not meant to be used after it.
     * This default does nothing.
     *
     * @since 0.1.0
     */
    @Override
    default void close() {}

    /** Starts a builder for an executor on {@code store}. */
    static Builder builder(ProcessedMessageStore store) {
        return new Builder(store);
    }

    /**
     * A handler for one message. It may return {@code null} (a handler with nothing to return);
     * the value reaches {@link HandlerResult#value()} as it is.
     */
    @FunctionalInterface
    interface HandlerBody<T> {
        @Nullable
        T run() throws Exception;
    }

    /**
     * A handler for a batch.
     */
    @FunctionalInterface
    interface BatchBody {

        /**
         * Processes the messages at {@code indexes} (ascending indexes into the batch given to
         * {@link #executeBatch}); the others are duplicates or are not to run now. To say that one
         * message failed and the ones before it are done, throw a {@link BatchFailedException}
         * with that message's index in the batch.
         */
        void run(List<Integer> indexes) throws Exception;
    }

    /**
     * Wraps the executor a {@link Builder} builds: the extension point through which an optional
     * module runs handlers under rules of its own (sumi-budgets' budget registry is one: it runs
     * handlers bound to a budget, {@link HandlerDefinition#budget()}, under that budget, and the
     * others as the executor it wraps does). A decorator forwards what it does not change, and keeps
     * the contract of {@link IdempotentExecutor} for what it does.
     *
     * @since 0.1.0
     */
    @FunctionalInterface
    interface Decorator {

        /**
         * The executor to use instead of {@code executor}; {@code executor} itself if there is
         * nothing to change. Applying a decorator to an executor it already decorated returns that
         * executor unchanged.
         */
        IdempotentExecutor decorate(IdempotentExecutor executor);
    }

    /**
     * Builds an {@link IdempotentExecutor}.
     */
    final class Builder {

        private final ProcessedMessageStore store;
        private TransactionSupport transactionSupport = TransactionSupport.none();
        private MeterRegistry meterRegistry = new CompositeMeterRegistry();
        private MessageKeyResolver keyResolver = new MessageKeyResolver();
        private @Nullable Duration reconcileAfter;
        private final List<Decorator> decorators = new ArrayList<>();
        private boolean leaseRenewal = true;
        private Duration maxRun = HandlerDefinition.DEFAULT_MAX_RUN;
        private ObservationRegistry observationRegistry = ObservationRegistry.NOOP;
        private LongSupplier ticker = System::nanoTime;

        private Builder(ProcessedMessageStore store) {
            this.store = Objects.requireNonNull(store, "store");
        }

        /** How transactions are seen and opened; {@link TransactionSupport#none()} by default. */
        public Builder transactionSupport(TransactionSupport transactionSupport) {
            this.transactionSupport = Objects.requireNonNull(transactionSupport, "transactionSupport");
            return this;
        }

        /** Where metrics go; none by default. */
        public Builder meterRegistry(MeterRegistry meterRegistry) {
            this.meterRegistry = Objects.requireNonNull(meterRegistry, "meterRegistry");
            return this;
        }

        /**
         * Where each handled message is observed ({@code sumi.message.handling}, tags
         * {@code consumer}, {@code mode}, {@code outcome}): a span per message with a tracer
         * bridge, a timer with a meter handler. None by default.
         *
         * @since 0.1.0
         */
        public Builder observationRegistry(ObservationRegistry observationRegistry) {
            this.observationRegistry = Objects.requireNonNull(observationRegistry, "observationRegistry");
            return this;
        }

        public Builder keyResolver(MessageKeyResolver keyResolver) {
            this.keyResolver = Objects.requireNonNull(keyResolver, "keyResolver");
            return this;
        }

        /**
         * The downstream provider's idempotency-key window for handlers that set none: a lease-mode
         * claim taken over after its message was first claimed longer ago than this is marked
         * {@code RECONCILE} instead of run again (see {@link ReconciliationRequiredException}).
         * {@code null} (the default) or zero: only handlers that set a window are checked.
         *
         * @since 0.1.0
         */
        public Builder reconcileAfter(@Nullable Duration reconcileAfter) {
            if (reconcileAfter != null && reconcileAfter.isNegative()) {
                throw new IllegalArgumentException("reconcileAfter must not be negative, was " + reconcileAfter);
            }
            this.reconcileAfter = reconcileAfter;
            return this;
        }

        /**
         * Adds a {@link Decorator} the built executor is wrapped in (sumi-budgets' {@code
         * BudgetRegistry}, for handlers bound to a budget). Decorators apply in the order added: the
         * first one wraps the executor, the next one wraps that. None by default.
         *
         * @since 0.1.0
         */
        public Builder decorator(Decorator decorator) {
            this.decorators.add(Objects.requireNonNull(decorator, "decorator"));
            return this;
        }

        /**
         * Whether a lease-mode claim is renewed while its handler runs (default {@code true}): every
         * third of its lease, from a small pool of daemon threads owned by the executor, fenced on
         * the claim token ({@link ProcessedMessageStore#renewAll}); renewal stops when the handler
         * returns or throws. Off: a handler that runs longer than its lease may be taken over by
         * another consumer while it runs.
         *
         * @since 0.1.0
         */
        public Builder leaseRenewal(boolean leaseRenewal) {
            this.leaseRenewal = leaseRenewal;
            return this;
        }

        /**
         * How long a lease-mode handler that sets none ({@link HandlerDefinition#maxRun()}) may run
         * with its lease renewed; past it, renewal stops, a WARN is logged and
         * {@code sumi.leases.overruns} counts it, and the lease lapses within one lease. Default
         * {@link HandlerDefinition#DEFAULT_MAX_RUN}.
         *
         * @throws IllegalArgumentException if {@code maxRun} is not positive
         * @since 0.1.0
         */
        public Builder maxRun(Duration maxRun) {
            Objects.requireNonNull(maxRun, "maxRun");
            if (maxRun.isNegative() || maxRun.isZero()) {
                throw new IllegalArgumentException("maxRun must be positive, was " + maxRun);
            }
            this.maxRun = maxRun;
            return this;
        }

        /**
         * The monotonic clock lease renewal reads, in nanoseconds ({@code System::nanoTime}). Package
         * private: tests pass one they move by hand, to make a renewal late without sleeping.
         */
        Builder ticker(LongSupplier ticker) {
            this.ticker = Objects.requireNonNull(ticker, "ticker");
            return this;
        }

        public IdempotentExecutor build() {
            IdempotentExecutor executor = new DefaultIdempotentExecutor(
                    store,
                    transactionSupport,
                    meterRegistry,
                    keyResolver,
                    reconcileAfter,
                    leaseRenewal,
                    maxRun,
                    observationRegistry,
                    ticker);
            for (Decorator decorator : decorators) {
                executor = decorator.decorate(executor);
            }
            return executor;
        }
    }
}
