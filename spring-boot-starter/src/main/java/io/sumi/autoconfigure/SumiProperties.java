package io.sumi.autoconfigure;

import io.sumi.consumer.FingerprintMismatchPolicy;
import io.sumi.consumer.IdempotencyMode;
import java.time.Duration;
import java.util.List;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.util.unit.DataSize;

/**
 * Sumi's configuration, under {@code sumi}. Immutable.
 *
 * @param ledger the processed-messages ledger
 * @param consumer defaults of {@code @IdempotentHandler} methods
 * @param kafka the Spring Kafka binder
 */
@ConfigurationProperties("sumi")
public record SumiProperties(
        @DefaultValue Ledger ledger,
        @DefaultValue Consumer consumer,
        @DefaultValue Kafka kafka) {

    /**
     * The processed-messages ledger.
     *
     * @param tableName the ledger table, an SQL identifier (optionally schema-qualified)
     * @param retention how long completed rows are kept before the pruning job deletes them (the Redis
     *     ledger's expire this long after their completion)
     * @param cache the in-memory front cache of completed keys
     * @param pruning the pruning job
     * @param metrics the ledger's gauges
     * @param store where the ledger lives: {@code jdbc} (the application's DataSource, the default) or
     *     {@code redis} (a Redis or Valkey server or cluster, lease mode only; needs
     *     {@code io.sumi:sumi-store-redis} and a {@code RedisConnectionFactory}, see docs/redis-ledger.md)
     * @param redis the Redis ledger ({@code sumi.ledger.store=redis})
     * @param asynchronousClaimCommit whether lease-mode batch claims (batch listeners, the Kafka
     *     poll claim) commit without waiting for PostgreSQL's WAL flush: a database crash just after
     *     such a claim can forget it (the key is then unclaimed again, and a message that ran under
     *     it may later run again); completions stay synchronous; ignored on MariaDB and H2; off by
     *     default (docs/kafka-poll-claim.md)
     */
    public record Ledger(
            @DefaultValue("processed_messages") String tableName,
            @DefaultValue("14d") Duration retention,
            @DefaultValue Cache cache,
            @DefaultValue Pruning pruning,
            @DefaultValue LedgerMetricsSettings metrics,
            @DefaultValue("jdbc") LedgerStore store,
            @DefaultValue RedisLedger redis,
            @DefaultValue("false") boolean asynchronousClaimCommit) {}

    /**
     * Where the ledger lives.
     *
     * @since 0.1.0
     */
    public enum LedgerStore {
        /** The ledger table in the application's DataSource: lease and transactional mode. */
        JDBC,
        /** Redis or Valkey (standalone, replicated or Redis Cluster): lease mode only. */
        REDIS
    }

    /**
     * The Redis ledger ({@code sumi.ledger.store=redis}). Its rows expire {@code sumi.ledger.retention}
     * after their completion, so no pruning job runs; the server is the application's
     * {@code RedisConnectionFactory} ({@code spring.data.redis.*}).
     *
     * @param prefix the prefix of every ledger key (printable ASCII, no braces)
     * @param waitForReplicas after every ledger write, {@code WAIT} until this many replicas have it
     *     ({@code 0}: do not wait); a write fewer replicas acknowledged in time fails, and its message
     *     is redelivered
     * @param waitTimeout how long one {@code WAIT} may take
     * @since 0.1.0
     */
    public record RedisLedger(
            @DefaultValue("sumi:ledger") String prefix,
            @DefaultValue("0") int waitForReplicas,
            @DefaultValue("1s") Duration waitTimeout) {}

    /**
     * The ledger's gauges ({@code sumi.ledger.claims.oldest.age}, {@code sumi.ledger.reconciliation.held}),
     * one of each per consumer of the application's {@code @IdempotentHandler}s.
     *
     * @param enabled whether the gauges are registered (when a {@code MeterRegistry} exists)
     * @param refreshInterval minimum time between two reads of the ledger, whoever reads the gauges
     * @since 0.1.0
     */
    public record LedgerMetricsSettings(
            @DefaultValue("true") boolean enabled,
            @DefaultValue("10s") Duration refreshInterval) {}

    /**
     * The in-memory (Caffeine) cache of completed keys, filled only after the commit that completed them.
     *
     * @param enabled whether redeliveries of keys this instance saw completed skip the database
     * @param maximumSize how many keys are remembered
     * @param expireAfterWrite how long a key is remembered (keep it below the retention)
     */
    public record Cache(
            @DefaultValue("true") boolean enabled,
            @DefaultValue("100000") long maximumSize,
            @DefaultValue("1h") Duration expireAfterWrite) {}

    /**
     * The job that deletes completed ledger rows older than the retention.
     *
     * @param enabled whether this instance runs the job (safe on every instance at once)
     * @param cron when it runs (Spring cron, six fields, the JVM's time zone)
     * @param batchSize rows per delete statement (one short transaction each)
     * @param maxBatches batches per run at most
     */
    public record Pruning(
            @DefaultValue("true") boolean enabled,
            @DefaultValue("0 */15 * * * *") String cron,
            @DefaultValue("1000") int batchSize,
            @DefaultValue("1000") int maxBatches) {}

    /**
     * Defaults of {@code @IdempotentHandler} methods, used where the annotation leaves an attribute at its default.
     *
     * @param mode the mode of handlers that say {@code AUTO}
     * @param lease how long a lease-mode claim is held without renewal: while the handler runs it
     *     is renewed every third of the lease, so this bounds how long a JVM killed mid-handler
     *     blocks its key, not how long a handler may run
     * @param fingerprintMismatch what a key reused with another payload does: {@code WARN} or {@code REJECT}
     * @param keyHeaders the headers tried for the key, in order
     * @param reconcileAfter the downstream provider's idempotency-key window (Stripe keeps keys about
     *     24 hours): a lease-mode message first claimed longer ago than this and never completed is
     *     marked {@code RECONCILE} instead of run again ({@code 0s}: never); handlers may set their own
     * @param leaseRenewal whether lease-mode claims are renewed while their handler runs (off: a
     *     handler that runs longer than its lease may be taken over while it runs)
     * @param maxRun how long a lease-mode handler may run with its lease renewed; past it, renewal
     *     stops (a WARN and {@code sumi.leases.overruns}) and the lease lapses within one lease;
     *     handlers may set their own ({@code @IdempotentHandler(maxRun = ...)})
     * @param reply the replies of handlers that keep them ({@code @IdempotentHandler(storeReply = true)})
     * @param renewalPool the connections lease renewals take, apart from the application's pool
     */
    public record Consumer(
            @DefaultValue("AUTO") IdempotencyMode mode,
            @DefaultValue("30s") Duration lease,
            @DefaultValue("WARN") FingerprintMismatchPolicy fingerprintMismatch,
            @DefaultValue({"outbox-id", "idempotency-key"}) List<String> keyHeaders,
            @DefaultValue("24h") Duration reconcileAfter,
            @DefaultValue("true") boolean leaseRenewal,
            @DefaultValue("15m") Duration maxRun,
            @DefaultValue Reply reply,
            @DefaultValue RenewalPool renewalPool) {

        /** The largest {@code sumi.consumer.reply.max-size} (MariaDB's {@code MEDIUMBLOB} column holds 16 MiB). */
        static final DataSize MAX_REPLY_SIZE_LIMIT = DataSize.ofMegabytes(16);

        /** The max reply size in bytes, checked. */
        int maxReplyBytes() {
            long bytes = reply.maxSize().toBytes();
            if (bytes <= 0 || bytes > MAX_REPLY_SIZE_LIMIT.toBytes()) {
                throw new IllegalStateException("sumi.consumer.reply.max-size must be more than 0 and at most 16MB"
                        + " (the ledger's reply column), was " + reply.maxSize());
            }
            // A stored reply counts 9 bytes of framing: the limit is of the column, not of the body alone.
            return (int) Math.min(bytes, Integer.MAX_VALUE);
        }
    }

    /**
     * The replies of handlers that keep them ({@code @IdempotentHandler(storeReply = true)},
     * docs/replies.md).
     *
     * @param maxSize the largest reply kept with a ledger row (body and kept headers); a larger one
     *     fails its message ({@code ReplyTooLargeException}, not retryable: to the dead-letter
     *     destination) before anything is completed or sent; at most 16MB
     */
    public record Reply(@DefaultValue("64KB") DataSize maxSize) {}

    /**
     * The connection pool of lease renewals (docs/consumer-semantics.md, "Long handlers"): a small
     * HikariCP pool of their own, configured as the application's (URL, credentials, driver
     * properties), so that a renewal never waits behind the application's work for a connection of
     * the ledger's DataSource; with every connection of that pool taken for longer than a lease,
     * running handlers would lose their claims. Created only when the ledger's DataSource is a
     * HikariCP pool and the starter builds the ledger; connections are opened when renewals need
     * them and closed after the pool's idle timeout.
     *
     * @param size connections at most (renewals run on two threads); {@code 0}: renewals take their
     *     connections from the ledger's DataSource, as other ledger calls do
     * @param connectionTimeout how long a renewal waits for a connection of that pool before it fails
     *     (a WARN, {@code sumi.leases.renewals{result=failed}}, tried again at the next tick); must
     *     be shorter than {@code sumi.consumer.lease}; default a sixth of it (5 s for 30 s), at least
     *     250 ms (HikariCP's minimum)
     */
    public record RenewalPool(
            @DefaultValue("2") int size, @Nullable Duration connectionTimeout) {

        /** HikariCP refuses a shorter connection timeout. */
        static final Duration MIN_CONNECTION_TIMEOUT = Duration.ofMillis(250);

        public RenewalPool {
            if (size < 0) {
                throw new IllegalArgumentException("sumi.consumer.renewal-pool.size must not be negative, was " + size);
            }
            if (connectionTimeout != null && connectionTimeout.compareTo(MIN_CONNECTION_TIMEOUT) < 0) {
                throw new IllegalArgumentException(
                        "sumi.consumer.renewal-pool.connection-timeout must be at least 250ms (HikariCP's minimum), was "
                                + connectionTimeout);
            }
        }

        /** The connection timeout for renewals of leases of {@code lease}, checked against it. */
        Duration connectionTimeout(Duration lease) {
            if (connectionTimeout == null) {
                Duration sixth = lease.dividedBy(6);
                return sixth.compareTo(MIN_CONNECTION_TIMEOUT) < 0 ? MIN_CONNECTION_TIMEOUT : sixth;
            }
            if (connectionTimeout.compareTo(lease) >= 0) {
                throw new IllegalStateException("sumi.consumer.renewal-pool.connection-timeout (" + connectionTimeout
                        + ") must be shorter than sumi.consumer.lease (" + lease + "): a renewal that waits for a"
                        + " connection as long as the lease lets the claim lapse while its handler runs");
            }
            return connectionTimeout;
        }
    }

    /**
     * The Spring Kafka binder.
     *
     * @param configureErrorHandlers whether every listener container's error handler learns Sumi's
     *     exceptions (no key: not retryable; busy key, budget refusal, reconciliation: retried, never
     *     recovered); an error handler Sumi cannot teach then fails start-up
     * @param busyRetryInterval how often a message whose key another consumer holds (or whose budget
     *     is spent) is retried
     * @param pollClaim whether lease-mode {@code @KafkaListener} record listeners claim all keys of
     *     a poll in one round trip on its first record and write the completions in one statement
     *     before the offsets are committed (docs/kafka-poll-claim.md); off by default
     * @param allowAsyncListeners whether {@code @IdempotentHandler} record listeners returning a
     *     {@code CompletableFuture} or {@code Mono} may start (on retry-topic containers only),
     *     accepting a loss window: Spring Kafka commits a failed future's offset before its retry is
     *     published, so a JVM that dies, or a retry publish that fails, in between loses the message;
     *     off by default: such a listener fails start-up (docs/consumer-semantics.md, "Asynchronous
     *     handlers")
     */
    public record Kafka(
            @DefaultValue("true") boolean configureErrorHandlers,
            @DefaultValue("1s") Duration busyRetryInterval,
            @DefaultValue("false") boolean pollClaim,
            @DefaultValue("false") boolean allowAsyncListeners) {}
}
