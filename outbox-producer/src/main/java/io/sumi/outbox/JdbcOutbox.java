package io.sumi.outbox;

import io.sumi.outbox.internal.HeadersJson;
import io.sumi.outbox.internal.Jdbc;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.jdbc.datasource.TransactionAwareDataSourceProxy;
import org.springframework.transaction.IllegalTransactionStateException;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * The JDBC {@link Outbox}: inserts on the connection bound to the caller's transaction.
 *
 * <p>The after-commit wake-up is one synchronization object per outbox; Spring keeps a
 * transaction's synchronizations in a set, so appending many rows registers it once.
 */
final class JdbcOutbox implements Outbox {

    private static final Logger log = LoggerFactory.getLogger(JdbcOutbox.class);

    private final OutboxTable table;
    private final DataSource dataSource;
    private final OutboxDialect dialect;
    private final Supplier<@Nullable String> traceId;
    private final Supplier<Map<String, String>> traceContext;
    private final @Nullable TransactionSynchronization wakeUp;

    JdbcOutbox(
            OutboxTable table,
            @Nullable Runnable afterCommit,
            Supplier<@Nullable String> traceId,
            Supplier<Map<String, String>> traceContext) {
        this.table = table;
        DataSource target = table.dataSource();
        // A TransactionAwareDataSourceProxy hands out proxies; the transaction is bound to its target.
        this.dataSource = target instanceof TransactionAwareDataSourceProxy proxy && proxy.getTargetDataSource() != null
                ? proxy.getTargetDataSource()
                : target;
        this.dialect = table.dialect();
        this.traceId = traceId;
        this.traceContext = traceContext;
        this.wakeUp = afterCommit == null ? null : new WakeUp(afterCommit);
    }

    @Override
    public long append(OutboxMessage message) {
        Instant now = table.clock().instant();
        String headers = HeadersJson.write(headers(message));
        long id = inTransaction(connection -> dialect.insert(
                connection,
                message.aggregateId(),
                message.topic(),
                message.payload(),
                headers,
                now,
                message.availableAt(now)));
        registerWakeUp();
        return id;
    }

    @Override
    public List<Long> appendAll(List<OutboxMessage> messages) {
        if (messages.isEmpty()) {
            requireTransaction();
            return List.of();
        }
        Instant now = table.clock().instant();
        List<OutboxDialect.NewRow> rows = new ArrayList<>(messages.size());
        for (OutboxMessage message : messages) {
            rows.add(new OutboxDialect.NewRow(
                    message.aggregateId(),
                    message.topic(),
                    message.payload(),
                    HeadersJson.write(headers(message)),
                    now,
                    message.availableAt(now)));
        }
        List<Long> ids = inTransaction(connection -> dialect.insertAll(connection, rows));
        registerWakeUp();
        return ids;
    }

    @Override
    public OutboxTable table() {
        return table;
    }

    private Map<String, String> headers(OutboxMessage message) {
        String trace = message.headers().containsKey(OutboxHeaders.TRACE_ID) ? null : traceId.get();
        Map<String, String> context = traceContext.get();
        if ((trace == null || trace.isBlank()) && context.isEmpty()) {
            return message.headers();
        }
        Map<String, String> headers = new LinkedHashMap<>();
        if (trace != null && !trace.isBlank()) {
            headers.put(OutboxHeaders.TRACE_ID, trace);
        }
        headers.putAll(context);
        // The message's own headers win over the ambient trace context.
        headers.putAll(message.headers());
        return headers;
    }

    private <T> T inTransaction(Jdbc.Work<T> work) {
        requireTransaction();
        Connection connection = DataSourceUtils.getConnection(dataSource);
        try {
            // DataSourceUtils binds a fresh connection to any active transaction, even one of another
            // resource; such a connection is in auto-commit mode, and the row would commit alone.
            if (!DataSourceUtils.isConnectionTransactional(connection, dataSource) || connection.getAutoCommit()) {
                throw new IllegalTransactionStateException(
                        "Outbox.append found an active transaction, but not on the outbox's"
                                + " DataSource: the row would commit on its own. Run it in a transaction of a transaction manager for"
                                + " the DataSource of the outbox table '" + table.tableName() + "'.");
            }
            return work.run(connection);
        } catch (SQLException ex) {
            throw Jdbc.translate("append", ex);
        } finally {
            DataSourceUtils.releaseConnection(connection, dataSource);
        }
    }

    private void requireTransaction() {
        if (!TransactionSynchronizationManager.isActualTransactionActive()) {
            throw new IllegalTransactionStateException(
                    "Outbox.append needs an active Spring-managed transaction (annotate the"
                            + " calling method with @Transactional, or use a TransactionTemplate): outside one, the outbox row would"
                            + " commit whether or not the business data does. Nothing was written.");
        }
        if (TransactionSynchronizationManager.isCurrentTransactionReadOnly()) {
            throw new IllegalTransactionStateException(
                    "Outbox.append was called in a read-only transaction; nothing was written");
        }
    }

    private void registerWakeUp() {
        if (wakeUp != null && TransactionSynchronizationManager.isSynchronizationActive()) {
            TransactionSynchronizationManager.registerSynchronization(wakeUp);
        }
    }

    /** Wakes the dispatcher after the commit. */
    private static final class WakeUp implements TransactionSynchronization {

        private final Runnable callback;

        WakeUp(Runnable callback) {
            this.callback = callback;
        }

        @Override
        public void afterCommit() {
            try {
                callback.run();
            } catch (RuntimeException ex) {
                // The rows are committed; the poll picks them up. Never fail the caller's commit path.
                log.warn("Waking the outbox dispatcher after commit failed; the next poll sends the rows", ex);
            }
        }
    }
}
