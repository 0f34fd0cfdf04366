package io.sumi.store.jdbc;

import io.sumi.jdbc.DatabaseType;
import io.sumi.jdbc.internal.ClaimTokens;
import io.sumi.jdbc.internal.ErrorSummaries;
import io.sumi.jdbc.internal.JdbcRunner;
import io.sumi.jdbc.internal.SqlIdentifiers;
import io.sumi.store.ClaimRequest;
import io.sumi.store.ClaimResult;
import io.sumi.store.ConsumerLedgerStats;
import io.sumi.store.LedgerKeyRules;
import io.sumi.store.MessageStatus;
import io.sumi.store.ProcessedMessage;
import io.sumi.store.ProcessedMessageStore;
import io.sumi.store.StoredReply;
import io.sumi.store.jdbc.internal.LedgerDialect;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.dao.DataAccessException;
import org.springframework.jdbc.core.ConnectionCallback;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * The JDBC ledger for PostgreSQL, MariaDB 10.5+ and H2.
 *
 * <p>Connections: lease-mode calls ({@link #claimAll}, {@link #completeAll}, {@link #releaseAll},
 * {@link #renewAll}, {@link #complete(ProcessedMessage, StoredReply)})
 * take a connection of their own from the {@link DataSource} and commit at once, even when the
 * calling thread has a transaction open: a lease must be visible to other consumers while the
 * handler runs, and a release must survive the rollback of the handler's transaction.
 * Transactional-mode claims ({@link #claimAllCompleted}, {@link #storeReply}), {@link #find},
 * {@link #findReply} and pruning use the
 * connection of the current Spring-managed transaction, if any.
 *
 * <p>Renewals ({@link #renewAll}) take their connection from the
 * {@link Builder#renewalDataSource renewal DataSource} when one is set, else from the ledger's.
 * A renewal keeps a running handler's claim alive; waiting for a connection behind the
 * application's own work (a pool held by busy handlers, a batch job, a slow query) past the lease
 * lets the claim lapse while the handler still runs, and another consumer then runs the message
 * too. A small pool of its own, with a connection timeout well below the lease, keeps renewals
 * out of that queue (the starter configures one by default).
 *
 * <p>Time: every time the ledger writes ({@code first_seen_at}, {@code lease_until},
 * {@code processed_at}) and every lease decision (take over a claim whose lease ended, end a lease
 * on release) is the database's clock, read inside the statement that uses it. Instances whose
 * clocks disagree therefore agree on every lease: a JVM whose clock runs ahead cannot take over a
 * live lease early, and one whose clock runs behind cannot hold a lease past its end. The store's
 * {@link Builder#clock Clock} is used only for times no statement wrote (see there).
 *
 * <p>Keys ({@link LedgerKeyRules}, the rule every Sumi ledger shares): a consumer name or message id
 * must be 1 to {@link #maxKeyLength()} UTF-16 characters of well-formed Unicode without NUL (U+0000). Anything else is refused with an
 * {@link IllegalArgumentException} before it reaches the database, because no database stores it
 * losslessly (PostgreSQL rejects NUL; drivers turn an unpaired surrogate into {@code ?}, so two
 * keys would become one). Keys are compared exactly: {@code "k"} and {@code "k "} are two keys
 * (Sumi's MariaDB migration gives the key columns the NO PAD collation {@code utf8mb4_nopad_bin}).
 *
 * <p>Error texts ({@link #releaseAll}, {@link #markForReconciliation}): unlike keys, they come
 * from exceptions and are never refused. They are stored as {@code last_error} holds them: NUL
 * characters, characters outside the Basic Multilingual Plane and unpaired surrogates replaced
 * by U+FFFD, then cut to 1,000 characters. If the column refuses even that (a {@code last_error}
 * in a charset narrower than Unicode, a constraint of the user's), the claims are released
 * without the text and a warning logs it: a release must never fail because of its error text,
 * or the claim would stay leased for the rest of its lease.
 *
 * <p>Deadlocks: concurrent upserts of the same keys can deadlock on MariaDB (InnoDB gap locks).
 * Lease-mode statements, which run alone in their own transaction, are retried a few times when
 * the database reports one, or a lock wait timeout (MariaDB 1205, H2 HYT00; see
 * {@code TransientSqlErrors}); a deadlock inside the caller's transaction propagates, so the
 * message is redelivered.
 *
 * <p>Thread-safe. Create one with {@link #builder(DataSource)}.
 */
public final class JdbcProcessedMessageStore implements ProcessedMessageStore {

    private static final Logger log = LoggerFactory.getLogger(JdbcProcessedMessageStore.class);

    /** The default table name. */
    public static final String DEFAULT_TABLE_NAME = "processed_messages";

    private final DataSource dataSource;
    private final DataSource renewalDataSource;
    private final JdbcTemplate jdbcTemplate;
    private final LedgerDialect dialect;
    private final Clock clock;
    private final ClaimTokens tokens = new ClaimTokens();

    private JdbcProcessedMessageStore(Builder builder) {
        this.dataSource = builder.dataSource;
        this.renewalDataSource = builder.renewalDataSource != null ? builder.renewalDataSource : builder.dataSource;
        this.jdbcTemplate = new JdbcTemplate(builder.dataSource);
        this.clock = builder.clock;
        DatabaseType type = builder.databaseType != null ? builder.databaseType : DatabaseType.of(builder.dataSource);
        this.dialect = LedgerDialect.of(type, builder.tableName, builder.asynchronousClaimCommit);
    }

    /** Starts a builder for a store on {@code dataSource}. */
    public static Builder builder(DataSource dataSource) {
        return new Builder(dataSource);
    }

    /**
     * Validates a table name for the ledger.
     *
     * @throws IllegalArgumentException unless {@code name} is an SQL identifier, optionally
     *     qualified by a schema ({@code sumi.processed_messages})
     */
    public static String validateTableName(String name) {
        return SqlIdentifiers.requireTableName(name, "ledger", DEFAULT_TABLE_NAME);
    }

    @Override
    public List<ClaimResult> claimAll(String consumer, List<ClaimRequest> requests, Duration lease) {
        Objects.requireNonNull(lease, "lease");
        if (lease.isNegative() || lease.isZero()) {
            throw new IllegalArgumentException("lease must be positive, was " + lease);
        }
        return claim(consumer, requests, false, lease);
    }

    @Override
    public List<ClaimResult> claimAllCompleted(String consumer, List<ClaimRequest> requests) {
        if (!TransactionSynchronizationManager.isActualTransactionActive()) {
            // Outside a transaction the row would commit COMPLETED before the handler ran, and a
            // crash would then lose the message.
            throw new IllegalStateException(
                    "claimCompleted needs an active Spring-managed transaction on the ledger's DataSource");
        }
        return claim(consumer, requests, true, null);
    }

    private List<ClaimResult> claim(
            String consumer, List<ClaimRequest> requests, boolean completed, @Nullable Duration lease) {
        validateKey("consumer", consumer);
        if (requests.isEmpty()) {
            return List.of();
        }
        // One row per id, sorted: concurrent batches then lock rows in the same order.
        Map<String, ClaimRequest> distinct = new TreeMap<>();
        for (ClaimRequest request : requests) {
            validateKey("message id", request.messageId());
            distinct.putIfAbsent(request.messageId(), request);
        }
        List<ClaimRequest> sorted = List.copyOf(distinct.values());
        long token = tokens.next(); // never 0, which marks a row we could not read (see below)
        Map<String, ProcessedMessage> claimed;
        if (completed) {
            claimed = jdbcTemplate.execute((ConnectionCallback<Map<String, ProcessedMessage>>) connection -> {
                if (connection.getAutoCommit()) {
                    // The active transaction is another resource's: Spring bound a plain connection of
                    // ours to it, and a COMPLETED row would commit on its own (issue 8, defect 3).
                    throw new IllegalStateException(
                            "claimCompleted needs a transaction that the ledger's DataSource takes part"
                                    + " in; the active transaction belongs to another resource, so the row would commit on its own");
                }
                return dialect.claim(connection, consumer, sorted, token, null);
            });
        } else {
            claimed =
                    inOwnTransaction("claim", connection -> dialect.claim(connection, consumer, sorted, token, lease));
        }
        Map<String, ProcessedMessage> rows = new HashMap<>(Objects.requireNonNull(claimed));
        List<String> missing = sorted.stream()
                .map(ClaimRequest::messageId)
                .filter(id -> !rows.containsKey(id))
                .toList();
        if (!missing.isEmpty()) {
            // Ids the claim did not return: on PostgreSQL every id a batch did not claim (its batch
            // claim returns only what it claimed), and, anywhere, ids a concurrent transaction
            // committed after our statement's snapshot (see PostgresLedgerDialect). A new statement
            // sees them.
            rows.putAll(findAll(consumer, missing, completed));
        }
        List<ClaimResult> results = new ArrayList<>(requests.size());
        for (ClaimRequest request : requests) {
            ProcessedMessage row = rows.get(request.messageId());
            if (row == null) {
                // Still invisible (a REPEATABLE READ snapshot): someone holds it, we do not know how
                // far they are. BUSY is the safe answer: the message is redelivered, never skipped.
                // (No statement wrote this row, so its time is the store's clock; nothing decides on it.)
                row = new ProcessedMessage(
                        consumer,
                        request.messageId(),
                        MessageStatus.IN_PROGRESS,
                        0L,
                        null,
                        0,
                        null,
                        null,
                        clock.instant(),
                        null);
            }
            results.add(ClaimResult.of(row, token));
        }
        return results;
    }

    private Map<String, ProcessedMessage> findAll(String consumer, List<String> ids, boolean inCallerTransaction) {
        JdbcRunner.Work<Map<String, ProcessedMessage>> read = connection -> dialect.find(connection, consumer, ids);
        return Objects.requireNonNull(
                inCallerTransaction
                        ? jdbcTemplate.execute((ConnectionCallback<Map<String, ProcessedMessage>>) read::run)
                        : inOwnTransaction("find", read));
    }

    @Override
    public int completeAll(String consumer, long claimToken, Collection<String> messageIds) {
        if (messageIds.isEmpty()) {
            return 0;
        }
        Set<String> ids = new LinkedHashSet<>(messageIds);
        return inOwnTransaction("complete", connection -> dialect.complete(connection, consumer, claimToken, ids));
    }

    /** One statement on a connection of its own, as {@link #completeAll}: completes the row and writes its reply. */
    @Override
    public boolean complete(ProcessedMessage claim, @Nullable StoredReply reply) {
        if (reply == null) {
            return complete(claim);
        }
        return inOwnTransaction(
                        "complete with reply",
                        connection -> dialect.completeWithReply(
                                connection, claim.consumer(), claim.claimToken(), claim.messageId(), reply))
                == 1;
    }

    /**
     * In the caller's transaction, as {@link #claimAllCompleted}, which wrote the row.
     *
     * @throws IllegalStateException if no Spring-managed transaction is active
     */
    @Override
    public boolean storeReply(ProcessedMessage claim, StoredReply reply) {
        if (!TransactionSynchronizationManager.isActualTransactionActive()) {
            throw new IllegalStateException(
                    "storeReply needs the Spring-managed transaction in which claimCompleted wrote the row");
        }
        Integer stored = jdbcTemplate.execute((ConnectionCallback<Integer>) connection ->
                dialect.storeReply(connection, claim.consumer(), claim.messageId(), claim.claimToken(), reply));
        return stored != null && stored == 1;
    }

    @Override
    public Optional<StoredReply> findReply(String consumer, String messageId) {
        validateKey("consumer", consumer);
        validateKey("message id", messageId);
        return Objects.requireNonNull(jdbcTemplate.execute((ConnectionCallback<Optional<StoredReply>>)
                connection -> dialect.findReply(connection, consumer, messageId)));
    }

    @Override
    public int releaseAll(String consumer, long claimToken, Collection<String> messageIds, @Nullable String error) {
        if (messageIds.isEmpty()) {
            return 0;
        }
        Set<String> ids = new LinkedHashSet<>(messageIds);
        String summary = error == null ? null : ErrorSummaries.sanitize(error);
        try {
            return inOwnTransaction(
                    "release", connection -> dialect.release(connection, consumer, claimToken, ids, summary));
        } catch (DataAccessException ex) {
            if (summary == null || !ErrorSummaries.isRefusal(ex)) {
                throw ex;
            }
            // The column refused even the cleaned text (a charset that holds less than Unicode, a
            // constraint of the user's): a release without its text beats a claim held for a whole
            // lease, and the text is in this log line.
            log.warn(
                    "Could not store the error text of {} released claim(s) of consumer '{}' ({}); released them"
                            + " without it. The error was: {}",
                    ids.size(),
                    consumer,
                    ex.getMostSpecificCause().getMessage(),
                    summary);
            return inOwnTransaction(
                    "release", connection -> dialect.release(connection, consumer, claimToken, ids, null));
        }
    }

    /**
     * Two statements in one transaction on a connection of its own: the
     * rows the claims inserted are deleted, the rows they took over get their attempt count back
     * and a new token, so a retry of a call whose commit was not acknowledged matches nothing.
     */
    @Override
    public int releaseUnrun(String consumer, long claimToken, Collection<String> messageIds) {
        if (messageIds.isEmpty()) {
            return 0;
        }
        Set<String> ids = new LinkedHashSet<>(messageIds);
        long handBack = tokens.next();
        try {
            return JdbcRunner.inOwnTransaction(
                    dataSource, connection -> dialect.releaseUnrun(connection, consumer, claimToken, handBack, ids));
        } catch (SQLException ex) {
            throw JdbcRunner.translate(jdbcTemplate.getExceptionTranslator(), "ledger release unrun", ex);
        }
    }

    @Override
    public int renewAll(String consumer, long claimToken, Collection<String> messageIds, Duration lease) {
        Objects.requireNonNull(lease, "lease");
        if (lease.isNegative() || lease.isZero()) {
            throw new IllegalArgumentException("lease must be positive, was " + lease);
        }
        if (messageIds.isEmpty()) {
            return 0;
        }
        Set<String> ids = new LinkedHashSet<>(messageIds);
        try {
            return JdbcRunner.autoCommitted(
                    renewalDataSource, connection -> dialect.renew(connection, consumer, claimToken, ids, lease));
        } catch (SQLException ex) {
            throw JdbcRunner.translate(jdbcTemplate.getExceptionTranslator(), "ledger renew", ex);
        }
    }

    @Override
    public boolean markForReconciliation(ProcessedMessage claim, @Nullable String reason) {
        String summary = reason == null ? null : ErrorSummaries.sanitize(reason);
        return inOwnTransaction(
                        "mark for reconciliation",
                        connection -> dialect.markForReconciliation(
                                connection, claim.consumer(), claim.claimToken(), claim.messageId(), summary))
                == 1;
    }

    @Override
    public boolean completeReconciled(String consumer, String messageId) {
        validateKey("consumer", consumer);
        validateKey("message id", messageId);
        return inOwnTransaction(
                        "complete reconciled",
                        connection -> dialect.completeReconciled(connection, consumer, messageId))
                == 1;
    }

    @Override
    public boolean releaseReconciled(String consumer, String messageId) {
        validateKey("consumer", consumer);
        validateKey("message id", messageId);
        return inOwnTransaction(
                        "release reconciled", connection -> dialect.deleteReconciled(connection, consumer, messageId))
                == 1;
    }

    @Override
    public Optional<ProcessedMessage> find(String consumer, String messageId) {
        validateKey("consumer", consumer);
        validateKey("message id", messageId);
        return Objects.requireNonNull(jdbcTemplate.execute((ConnectionCallback<Optional<ProcessedMessage>>)
                connection -> dialect.find(connection, consumer, messageId)));
    }

    @Override
    public int deleteCompletedBefore(Instant cutoff, int limit) {
        if (limit <= 0) {
            throw new IllegalArgumentException("limit must be positive, was " + limit);
        }
        Integer deleted = jdbcTemplate.execute(
                (ConnectionCallback<Integer>) connection -> dialect.deleteCompletedBefore(connection, cutoff, limit));
        return deleted == null ? 0 : deleted;
    }

    @Override
    public Map<String, ConsumerLedgerStats> consumerStats() {
        return Map.copyOf(Objects.requireNonNull(
                jdbcTemplate.execute((ConnectionCallback<Map<String, ConsumerLedgerStats>>) dialect::consumerStats)));
    }

    private void validateKey(String what, @Nullable String value) {
        LedgerKeyRules.requireValidKey(what, value, maxKeyLength());
    }

    /**
     * Runs {@code work} on a connection of its own in auto-commit mode (each statement commits at
     * once; every dialect statement is complete by itself), retrying it when it loses to other
     * transactions' locks (deadlock, lock wait timeout: {@link JdbcRunner#autoCommitted}).
     */
    private <T> T inOwnTransaction(String task, JdbcRunner.Work<T> work) {
        try {
            return JdbcRunner.autoCommitted(dataSource, work);
        } catch (SQLException ex) {
            throw JdbcRunner.translate(jdbcTemplate.getExceptionTranslator(), "ledger " + task, ex);
        }
    }

    /**
     * Builds a {@link JdbcProcessedMessageStore}.
     */
    public static final class Builder {

        private final DataSource dataSource;
        private @Nullable DataSource renewalDataSource;
        private String tableName = DEFAULT_TABLE_NAME;
        private Clock clock = Clock.systemUTC();
        private @Nullable DatabaseType databaseType;
        private boolean asynchronousClaimCommit;

        private Builder(DataSource dataSource) {
            this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
        }

        /** The ledger table; validated as an SQL identifier. Default {@value #DEFAULT_TABLE_NAME}. */
        public Builder tableName(String tableName) {
            this.tableName = validateTableName(tableName);
            return this;
        }

        /**
         * The clock of times the store makes up without the database: the placeholder row of a
         * claim answered {@code BUSY} because the holder's row was not yet visible. Every time
         * written to the ledger and every lease decision uses the database's clock instead, so this
         * clock never decides a lease. Default: {@link Clock#systemUTC()}.
         */
        public Builder clock(Clock clock) {
            this.clock = Objects.requireNonNull(clock, "clock");
            return this;
        }

        /**
         * Where lease renewals ({@link #renewAll}) take their connection: a small pool of its own
         * on the same database (as many connections as the renewal threads, two for Sumi's
         * executor), whose connection timeout is well below the shortest lease, so that a renewal
         * never queues behind the application's work on the ledger's DataSource. The store does
         * not close it. Default: the ledger's DataSource (renewals then wait in its queue: with
         * every connection taken for longer than a lease, running handlers lose their claims).
         *
         * @since 0.1.0
         */
        public Builder renewalDataSource(DataSource renewalDataSource) {
            this.renewalDataSource = Objects.requireNonNull(renewalDataSource, "renewalDataSource");
            return this;
        }

        /**
         * Whether lease-mode batch claims ({@link #claimAll} of two or more keys: a batch
         * listener's claim, the Kafka poll claim) commit without waiting for the database's WAL
         * flush. PostgreSQL only ({@code synchronous_commit = off} for the claim's own transaction;
         * MariaDB and H2 ignore it). Completions, releases, renewals and single-key claims stay
         * synchronous. What it changes: a claim that had returned can be lost if the database
         * server crashes within about three {@code wal_writer_delay}s (600 ms by default) after it;
         * the key is then unclaimed again (or its earlier, expired claim is back), as if its lease
         * had ended, and the completion written after the restart finds no claim of its token
         * ({@code sumi.leases.lost}, a WARN): the message's effect happened but the ledger does not
         * record it, so a later copy of it runs again. A completion that committed makes its claim
         * durable too (the WAL is flushed in order). Default {@code false}.
         *
         * @since 0.1.0
         */
        public Builder asynchronousClaimCommit(boolean asynchronousClaimCommit) {
            this.asynchronousClaimCommit = asynchronousClaimCommit;
            return this;
        }

        /** The database; detected from the connection's metadata when not set. */
        public Builder databaseType(DatabaseType databaseType) {
            this.databaseType = Objects.requireNonNull(databaseType, "databaseType");
            return this;
        }

        public JdbcProcessedMessageStore build() {
            return new JdbcProcessedMessageStore(this);
        }
    }
}
