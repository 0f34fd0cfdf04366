package io.sumi.outbox;

import java.util.List;

/**
 * The header names the outbox writes. Every header travels with the message to the broker;
 * {@link #OUTBOX_ID} is added by the dispatcher and is what Sumi's consumers take as the
 * idempotency key.
 */
public final class OutboxHeaders {

    /** The row id, as decimal text: the consumer's (and the downstream provider's) idempotency key. */
    public static final String OUTBOX_ID = "outbox-id";

    /** The trace id of the transaction that appended the row, when there was one. */
    public static final String TRACE_ID = "trace-id";

    /**
     * The W3C trace context of the transaction that appended the row, when the outbox was given a
     * {@linkplain Outbox.Builder#traceContext trace context} source (the starter does, with
     * Micrometer Tracing): the consumer's span continues that trace.
     *
     * @since 0.1.0
     */
    public static final String TRACEPARENT = "traceparent";

    /** The payload's schema version, when the appender gave one. */
    public static final String SCHEMA_VERSION = "schema-version";

    /** The tenant, when the appender gave one. */
    public static final String TENANT_ID = "tenant-id";

    /**
     * The MDC keys read for the trace id, in order: Micrometer Tracing / Spring Boot
     * ({@code traceId}), OpenTelemetry's logging instrumentation ({@code trace_id}), and
     * Spring Cloud Sleuth / B3 ({@code X-B3-TraceId}).
     */
    public static final List<String> MDC_TRACE_ID_KEYS = List.of("traceId", "trace_id", "X-B3-TraceId");

    private OutboxHeaders() {}
}
