package io.sumi.outbox;

import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.springframework.dao.DataAccessException;
import org.springframework.transaction.IllegalTransactionStateException;

/**
 * Appends messages to the outbox in the caller's transaction, so they commit (or roll back)
 * together with the business rows written in it. A dispatcher sends them once committed.
 *
 * <pre>{@code
 * @Transactional
 * public void placeOrder(Order order) {
 *     orders.save(order);
 *     outbox.append(OutboxMessage.builder(order.id(), "mail.send", welcomeMailJson(order))
 *             .schemaVersion("1")
 *             .delay(Duration.ofMinutes(3))
 *             .build());
 * }
 * }</pre>
 *
 * <p>Transactions: {@code append} needs an active Spring-managed transaction whose connection is
 * the outbox table's DataSource's (a {@code DataSourceTransactionManager}, a
 * {@code JpaTransactionManager} on that DataSource, or JTA). Outside one it throws
 * {@link IllegalTransactionStateException} and writes nothing: written alone, the row would
 * commit whether or not the business rows do.
 *
 * <p>Headers: the trace id of the current trace is added as {@link OutboxHeaders#TRACE_ID} when
 * the message has none (by default read from the MDC, see {@link OutboxHeaders#MDC_TRACE_ID_KEYS}).
 * With a {@linkplain Builder#traceContext trace context} source, the current trace context is added
 * too, as the propagation headers the tracer writes (W3C {@code traceparent}, ...): the dispatcher
 * sends them with the record, so the consumer's span continues the trace of the transaction that
 * appended the message (docs/tracing.md).
 *
 * <p>Latency: after the transaction commits, the local dispatcher (if one is registered with
 * {@link Builder#afterCommit}) is woken, so the rows are sent at once instead of at the next poll.
 *
 * <p>Thread-safe. Create one with {@link #builder(OutboxTable)}.
 */
public interface Outbox {

    /**
     * Appends one message in the current transaction.
     *
     * @return the row id (sent as {@link OutboxHeaders#OUTBOX_ID})
     * @throws IllegalTransactionStateException if no transaction on the outbox's DataSource is
     *     active, or it is read-only
     * @throws DataAccessException if the row cannot be inserted
     */
    long append(OutboxMessage message);

    /**
     * Appends a message without headers, to send at once.
     *
     * @see #append(OutboxMessage)
     */
    default long append(String aggregateId, String topic, String payload) {
        return append(OutboxMessage.of(aggregateId, topic, payload));
    }

    /**
     * Appends messages in one JDBC batch, in the current transaction, in list order (so messages of
     * one aggregate are sent in that order).
     *
     * @return the row ids, in list order
     * @throws IllegalTransactionStateException as {@link #append(OutboxMessage)}
     * @throws DataAccessException if the rows cannot be inserted
     */
    List<Long> appendAll(List<OutboxMessage> messages);

    /** The table the messages go to. */
    OutboxTable table();

    /** Starts a builder for an outbox on {@code table}. */
    static Builder builder(OutboxTable table) {
        return new Builder(table);
    }

    /**
     * Builds an {@link Outbox}.
     */
    final class Builder {

        private final OutboxTable table;
        private @Nullable Runnable afterCommit;
        private Supplier<@Nullable String> traceId = TraceIds::fromMdc;
        private Supplier<Map<String, String>> traceContext = Map::of;

        private Builder(OutboxTable table) {
            this.table = Objects.requireNonNull(table, "table");
        }

        /**
         * Runs {@code callback} after each transaction that appended rows commits (once per
         * transaction, on the committing thread; it must not block). Typically
         * {@code dispatcher::wakeUp}.
         */
        public Builder afterCommit(Runnable callback) {
            this.afterCommit = Objects.requireNonNull(callback, "callback");
            return this;
        }

        /**
         * Where the trace id comes from when a message has none; {@code null} or blank means no
         * trace. By default the MDC keys {@link OutboxHeaders#MDC_TRACE_ID_KEYS} are read.
         */
        public Builder traceId(Supplier<@Nullable String> traceId) {
            this.traceId = Objects.requireNonNull(traceId, "traceId");
            return this;
        }

        /**
         * The current trace context as propagation headers (W3C {@code traceparent} and
         * {@code tracestate}, B3, baggage: whatever the application's propagator writes), read
         * once per append and stored with each message that does not set those headers itself.
         * Empty by default; the starter wires Micrometer Tracing's propagator when a tracer exists.
         *
         * @since 0.1.0
         */
        public Builder traceContext(Supplier<Map<String, String>> traceContext) {
            this.traceContext = Objects.requireNonNull(traceContext, "traceContext");
            return this;
        }

        public Outbox build() {
            return new JdbcOutbox(table, afterCommit, traceId, traceContext);
        }
    }
}
