package io.sumi.consumer;

import java.time.Duration;
import java.util.List;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * The settings of one idempotent handler, resolved from its {@link IdempotentHandler} annotation
 * and the configured defaults. Immutable; build with {@link #builder(String)}.
 *
 * @param consumer the ledger namespace
 * @param mode how the ledger takes messages
 * @param lease how long a lease-mode claim is held without renewal; while the handler runs, the
 *     executor renews it every third of the lease (see {@link IdempotentExecutor.Builder#leaseRenewal})
 * @param fingerprintPolicy what a reused key with another payload does ({@code WARN} or {@code REJECT})
 * @param keyHeaders header names tried, in order, for the key
 * @param keyExpression a SpEL expression computing the key when no header has one, or {@code null}
 * @param budget the name of the budget the handler's calls spend, or {@code null} for none (since 0.1.0)
 * @param reconcileAfter the provider's idempotency-key window after which a taken-over lease-mode
 *     claim is marked for reconciliation instead of run again; {@code null}: the executor's
 *     default; zero: never (since 0.1.0)
 * @param maxRun how long a lease-mode handler may run with its lease renewed; past it, renewal
 *     stops (reported) and the lease lapses within one lease; {@code null}: the executor's default
 *     (since 0.1.0)
 * @param storeReply whether the handler's reply is kept with its ledger row and given again to
 *     duplicates ({@link IdempotentHandler#storeReply()}; since 0.1.0)
 * @param maxReplySize the largest reply kept, in bytes ({@link io.sumi.store.StoredReply#size()});
 *     a larger one fails the message (since 0.1.0)
 */
public record HandlerDefinition(
        String consumer,
        IdempotencyMode mode,
        Duration lease,
        FingerprintMismatchPolicy fingerprintPolicy,
        List<String> keyHeaders,
        @Nullable String keyExpression,
        @Nullable String budget,
        @Nullable Duration reconcileAfter,
        @Nullable Duration maxRun,
        boolean storeReply,
        int maxReplySize) {

    /** The header the outbox producer writes its row id to. */
    public static final String OUTBOX_ID_HEADER = "outbox-id";

    /** The conventional idempotency-key header. */
    public static final String IDEMPOTENCY_KEY_HEADER = "idempotency-key";

    /** Headers tried for the key by default, in order. */
    public static final List<String> DEFAULT_KEY_HEADERS = List.of(OUTBOX_ID_HEADER, IDEMPOTENCY_KEY_HEADER);

    /**
     * Default lease of a lease-mode claim: 30 seconds, renewed every 10 seconds while the handler
     * runs. A JVM killed mid-handler blocks its key for at most this long; two renewals in a row
     * may fail (a database fail-over, a long GC pause) before the lease runs out.
     */
    public static final Duration DEFAULT_LEASE = Duration.ofSeconds(30);

    /**
     * Default max run time of a lease-mode handler whose lease is renewed: 15 minutes, far above a
     * slow provider call (an LLM call of several minutes) and below the point where a hung handler
     * (a socket without a timeout) should give its key back.
     *
     * @since 0.1.0
     */
    public static final Duration DEFAULT_MAX_RUN = Duration.ofMinutes(15);

    /**
     * Default largest reply a handler that keeps replies may keep: 64 KiB, above a typical JSON
     * answer and small enough that a ledger of millions of rows does not become a blob store.
     *
     * @since 0.1.0
     */
    public static final int DEFAULT_MAX_REPLY_SIZE = 64 * 1024;

    public HandlerDefinition {
        Objects.requireNonNull(consumer, "consumer");
        if (consumer.isBlank()) {
            throw new IllegalArgumentException("The consumer (ledger namespace) must not be blank");
        }
        Objects.requireNonNull(mode, "mode");
        Objects.requireNonNull(lease, "lease");
        if (lease.isNegative() || lease.isZero()) {
            throw new IllegalArgumentException(
                    "The lease of consumer '" + consumer + "' must be positive, was " + lease);
        }
        if (fingerprintPolicy == FingerprintMismatchPolicy.DEFAULT) {
            fingerprintPolicy = FingerprintMismatchPolicy.WARN;
        }
        keyHeaders = List.copyOf(keyHeaders);
        if (keyExpression != null && keyExpression.isBlank()) {
            keyExpression = null;
        }
        if (budget != null && budget.isBlank()) {
            budget = null;
        }
        if (reconcileAfter != null && reconcileAfter.isNegative()) {
            throw new IllegalArgumentException("The reconcile-after window of consumer '" + consumer
                    + "' must not be negative, was " + reconcileAfter);
        }
        if (maxRun != null && (maxRun.isNegative() || maxRun.isZero())) {
            throw new IllegalArgumentException(
                    "The max run time of consumer '" + consumer + "' must be positive, was " + maxRun);
        }
        if (maxReplySize <= 0) {
            throw new IllegalArgumentException(
                    "The max reply size of consumer '" + consumer + "' must be positive, was " + maxReplySize);
        }
    }

    /** Starts a definition for the ledger namespace {@code consumer}, with the defaults. */
    public static Builder builder(String consumer) {
        return new Builder(consumer);
    }

    /** Builds a {@link HandlerDefinition}. */
    public static final class Builder {

        private final String consumer;
        private IdempotencyMode mode = IdempotencyMode.AUTO;
        private Duration lease = DEFAULT_LEASE;
        private FingerprintMismatchPolicy fingerprintPolicy = FingerprintMismatchPolicy.WARN;
        private List<String> keyHeaders = DEFAULT_KEY_HEADERS;
        private @Nullable String keyExpression;
        private @Nullable String budget;
        private @Nullable Duration reconcileAfter;
        private @Nullable Duration maxRun;
        private boolean storeReply;
        private int maxReplySize = DEFAULT_MAX_REPLY_SIZE;

        private Builder(String consumer) {
            this.consumer = consumer;
        }

        public Builder mode(IdempotencyMode mode) {
            this.mode = mode;
            return this;
        }

        public Builder lease(Duration lease) {
            this.lease = lease;
            return this;
        }

        public Builder fingerprintPolicy(FingerprintMismatchPolicy fingerprintPolicy) {
            this.fingerprintPolicy = fingerprintPolicy;
            return this;
        }

        public Builder keyHeaders(List<String> keyHeaders) {
            this.keyHeaders = keyHeaders;
            return this;
        }

        public Builder keyExpression(@Nullable String keyExpression) {
            this.keyExpression = keyExpression;
            return this;
        }

        /** The budget the handler's calls spend ({@code null} or blank: none). */
        public Builder budget(@Nullable String budget) {
            this.budget = budget;
            return this;
        }

        /** The provider's idempotency-key window ({@code null}: the executor's default; zero: never). */
        public Builder reconcileAfter(@Nullable Duration reconcileAfter) {
            this.reconcileAfter = reconcileAfter;
            return this;
        }

        /**
         * How long a lease-mode handler may run with its lease renewed ({@code null}: the executor's
         * default, {@link IdempotentExecutor.Builder#maxRun}).
         *
         * @since 0.1.0
         */
        public Builder maxRun(@Nullable Duration maxRun) {
            this.maxRun = maxRun;
            return this;
        }

        /**
         * Whether the handler's reply is kept with its ledger row and given again to duplicates
         * (default {@code false}).
         *
         * @since 0.1.0
         */
        public Builder storeReply(boolean storeReply) {
            this.storeReply = storeReply;
            return this;
        }

        /**
         * The largest reply kept, in bytes (default {@link #DEFAULT_MAX_REPLY_SIZE}).
         *
         * @since 0.1.0
         */
        public Builder maxReplySize(int maxReplySize) {
            this.maxReplySize = maxReplySize;
            return this;
        }

        /**
         * Builds the definition, checking every setting.
         *
         * @throws IllegalArgumentException if a setting is invalid (blank consumer, non-positive lease,
         *     max run time or max reply size, negative reconcile-after window)
         */
        public HandlerDefinition build() {
            return new HandlerDefinition(
                    consumer,
                    mode,
                    lease,
                    fingerprintPolicy,
                    keyHeaders,
                    keyExpression,
                    budget,
                    reconcileAfter,
                    maxRun,
                    storeReply,
                    maxReplySize);
        }
    }
}
