/**
 * CDC dispatch of the outbox: PostgreSQL's write-ahead log, read with the Debezium embedded engine
 * ({@code pgoutput}), tells which rows were inserted; they are claimed, sent through the
 * application's {@link io.sumi.outbox.OutboxPublisher} and marked by
 * {@link io.sumi.outbox.OutboxDispatcher#dispatchAmong}, under the polling dispatcher's rules. The
 * polling dispatcher stays the safety net. Start with {@link io.sumi.outbox.cdc.OutboxCdc}; see
 * docs/outbox-cdc.md.
 */
@NullMarked
package io.sumi.outbox.cdc;

import org.jspecify.annotations.NullMarked;
