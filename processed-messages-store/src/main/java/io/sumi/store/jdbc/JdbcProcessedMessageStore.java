package io.sumi.store.jdbc;

import io.sumi.store.ClaimRequest;
import io.sumi.store.ClaimResult;
import io.sumi.store.MessageStatus;
import io.sumi.store.ProcessedMessage;
import io.sumi.store.ProcessedMessageStore;
import io.sumi.store.jdbc.internal.H2LedgerDialect;
import io.sumi.store.jdbc.internal.LedgerDialect;
import io.sumi.store.jdbc.internal.MariaDbLedgerDialect;
import io.sumi.store.jdbc.internal.PostgresLedgerDialect;
import io.sumi.store.jdbc.internal.TransientSqlErrors;
import java.security.SecureRandom;
import java.sql.Connection;
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
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.springframework.jdbc.core.ConnectionCallback;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * The JDBC ledger for PostgreSQL, MariaDB 10.5+ and H2.
 *
 * <p>Connections: lease-mode calls ({@link #claimAll}, {@link #completeAll}, {@link #releaseAll})
 * take a connection of their own from the {@link DataSource} and commit at once, even when the
 * calling thread has a transaction open: a lease must be visible to other consumers while the
 * handler runs, and a release must survive the rollback of the handler's transaction.
 * Transactional-mode claims ({@link #claimAllCompleted}), {@link #find} and pruning use the
 * connection of the current Spring-managed transaction, if any.
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

    /** The default table name. */
    public static final String DEFAULT_TABLE_NAME = "processed_messages";

    /** Table names are formatted into SQL, so only plain (optionally schema-qualified) identifiers pass. */
    private static final Pattern IDENTIFIER = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,62}(\\.[A-Za-z_][A-Za-z0-9_]{0,62})?");

    private static final int ERROR_SUMMARY_LENGTH = 1000;

    private final DataSource dataSource;
    private final JdbcTemplate jdbcTemplate;
    private final LedgerDialect dialect;
    private final Clock clock;
    private final SecureRandom random = new SecureRandom();

    private JdbcProcessedMessageStore(Builder builder) {
        this.dataSource = builder.dataSource;
        this.jdbcTemplate = new JdbcTemplate(builder.dataSource);
        this.clock = builder.clock;
        DatabaseType type = builder.databaseType != null ? builder.databaseType : DatabaseType.of(builder.dataSource);
        this.dialect = switch (type) {
            case POSTGRESQL -> new PostgresLedgerDialect(builder.tableName);
            case MARIADB -> new MariaDbLedgerDialect(builder.tableName);
            case H2 -> new H2LedgerDialect(builder.tableName);
        };
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
        if (name == null || !IDENTIFIER.matcher(name).matches()) {
            throw new IllegalArgumentException("Invalid ledger table name '" + name
                    + "': expected an SQL identifier such as processed_messages or myschema.processed_messages"
                    + " (letters, digits and underscores, not starting with a digit, at most 63 characters per part)");
        }
        return name;
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
            throw new IllegalStateException("claimCompleted needs an active Spring-managed transaction on the ledger's DataSource");
        }
        return claim(consumer, requests, true, null);
    }

    private List<ClaimResult> claim(String consumer, List<ClaimRequest> requests, boolean completed, @Nullable Duration lease) {
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
        long token = newToken();
        Instant now = clock.instant();
        Map<String, ProcessedMessage> claimed;
        if (completed) {
            claimed = jdbcTemplate.execute((ConnectionCallback<Map<String, ProcessedMessage>>) connection -> {
                if (connection.getAutoCommit()) {
                    // The active transaction is another resource's: Spring bound a plain connection of
                    // ours to it, and a COMPLETED row would commit on its own (issue 8, defect 3).
                    throw new IllegalStateException("claimCompleted needs a transaction that the ledger's DataSource takes part"
                            + " in; the active transaction belongs to another resource, so the row would commit on its own");
                }
                return dialect.claim(connection, consumer, sorted, token, now, null);
            });
        }
        else {
            Instant leaseUntil = now.plus(Objects.requireNonNull(lease));
            claimed = inOwnTransaction("claim", connection -> dialect.claim(connection, consumer, sorted, token, now, leaseUntil));
        }
        Map<String, ProcessedMessage> rows = new HashMap<>(Objects.requireNonNull(claimed));
        List<String> missing = sorted.stream().map(ClaimRequest::messageId).filter(id -> !rows.containsKey(id)).toList();
        if (!missing.isEmpty()) {
            // A concurrent transaction committed these ids after our statement's snapshot (see
            // PostgresLedgerDialect); a new statement sees them.
            rows.putAll(findAll(consumer, missing, completed));
        }
        List<ClaimResult> results = new ArrayList<>(requests.size());
        for (ClaimRequest request : requests) {
            ProcessedMessage row = rows.get(request.messageId());
            if (row == null) {
                // Still invisible (a REPEATABLE READ snapshot): someone holds it, we do not know how
                // far they are. BUSY is the safe answer: the message is redelivered, never skipped.
                row = new ProcessedMessage(consumer, request.messageId(), MessageStatus.IN_PROGRESS, 0L, null, 0,
                        null, null, now, null);
            }
            results.add(ClaimResult.of(row, token));
        }
        return results;
    }

    private Map<String, ProcessedMessage> findAll(String consumer, List<String> ids, boolean inCallerTransaction) {
        ConnectionCallback<Map<String, ProcessedMessage>> read = connection -> dialect.find(connection, consumer, ids);
        return Objects.requireNonNull(inCallerTransaction ? jdbcTemplate.execute(read) : inOwnTransaction("find", read));
    }

    @Override
    public int completeAll(String consumer, long claimToken, Collection<String> messageIds) {
        if (messageIds.isEmpty()) {
            return 0;
        }
        Instant now = clock.instant();
        Set<String> ids = new LinkedHashSet<>(messageIds);
        return inOwnTransaction("complete", connection -> dialect.complete(connection, consumer, claimToken, ids, now));
    }

    @Override
    public int releaseAll(String consumer, long claimToken, Collection<String> messageIds, @Nullable String error) {
        if (messageIds.isEmpty()) {
            return 0;
        }
        Instant now = clock.instant();
        Set<String> ids = new LinkedHashSet<>(messageIds);
        String summary = error == null || error.length() <= ERROR_SUMMARY_LENGTH ? error : error.substring(0, ERROR_SUMMARY_LENGTH);
        return inOwnTransaction("release", connection -> dialect.release(connection, consumer, claimToken, ids, summary, now));
    }

    @Override
    public boolean markForReconciliation(ProcessedMessage claim, @Nullable String reason) {
        String summary = reason == null || reason.length() <= ERROR_SUMMARY_LENGTH ? reason : reason.substring(0, ERROR_SUMMARY_LENGTH);
        return inOwnTransaction("mark for reconciliation", connection -> dialect.markForReconciliation(connection,
                claim.consumer(), claim.claimToken(), claim.messageId(), summary)) == 1;
    }

    @Override
    public Optional<ProcessedMessage> find(String consumer, String messageId) {
        return Objects.requireNonNull(jdbcTemplate.execute((ConnectionCallback<Optional<ProcessedMessage>>) connection ->
                dialect.find(connection, consumer, messageId)));
    }

    @Override
    public int deleteCompletedBefore(Instant cutoff, int limit) {
        if (limit <= 0) {
            throw new IllegalArgumentException("limit must be positive, was " + limit);
        }
        Integer deleted = jdbcTemplate.execute((ConnectionCallback<Integer>) connection ->
                dialect.deleteCompletedBefore(connection, cutoff, limit));
        return deleted == null ? 0 : deleted;
    }

    private void validateKey(String what, @Nullable String value) {
        if (value == null || value.isEmpty()) {
            throw new IllegalArgumentException("The " + what + " must not be empty");
        }
        if (value.length() > maxKeyLength()) {
            throw new IllegalArgumentException("The " + what + " is " + value.length() + " characters long; the ledger takes at most "
                    + maxKeyLength() + " (it is rejected, not truncated, so that two long keys never collide)");
        }
    }

    private long newToken() {
        long token;
        do {
            token = random.nextLong();
        }
        while (token == 0L); // 0 marks a row we could not read (see claim)
        return token;
    }

    /**
     * Runs {@code work} on a connection of its own, committed at once, retrying it when it loses
     * to other transactions' locks (deadlock, lock wait timeout: {@link TransientSqlErrors}).
     */
    private <T> T inOwnTransaction(String task, ConnectionCallback<T> work) {
        try {
            return TransientSqlErrors.retrying(() -> {
                try (Connection connection = dataSource.getConnection()) {
                    if (!connection.getAutoCommit()) {
                        connection.setAutoCommit(true);
                    }
                    return work.doInConnection(connection);
                }
            });
        }
        catch (SQLException ex) {
            RuntimeException translated = jdbcTemplate.getExceptionTranslator().translate("ledger " + task, null, ex);
            throw translated != null ? translated : new IllegalStateException("ledger " + task + " failed", ex);
        }
    }

    /**
     * Builds a {@link JdbcProcessedMessageStore}.
     */
    public static final class Builder {

        private final DataSource dataSource;
        private String tableName = DEFAULT_TABLE_NAME;
        private Clock clock = Clock.systemUTC();
        private @Nullable DatabaseType databaseType;

        private Builder(DataSource dataSource) {
            this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
        }

        /** The ledger table; validated as an SQL identifier. Default {@value #DEFAULT_TABLE_NAME}. */
        public Builder tableName(String tableName) {
            this.tableName = validateTableName(tableName);
            return this;
        }

        /** The clock every ledger time is taken from (never the database's clock). */
        public Builder clock(Clock clock) {
            this.clock = Objects.requireNonNull(clock, "clock");
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
