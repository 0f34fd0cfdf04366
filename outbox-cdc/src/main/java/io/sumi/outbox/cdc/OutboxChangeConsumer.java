package io.sumi.outbox.cdc;

import io.debezium.engine.DebeziumEngine;
import io.debezium.engine.RecordChangeEvent;
import io.sumi.outbox.DispatchResult;
import io.sumi.outbox.OutboxDispatcher;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.connect.data.Field;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.source.SourceRecord;
import org.jspecify.annotations.Nullable;

/**
 * Turns each batch of change events into one {@link OutboxDispatcher#dispatchAmong} call and marks
 * the batch processed only after it returned: every row of the batch is then acknowledged by the
 * broker and marked dispatched, or left pending for the polling dispatcher (delayed, leased by it,
 * behind an earlier row, failed). Only then may the engine commit the batch's offsets and confirm
 * its LSN to the slot. An exception (the database unreachable) fails the engine before the commit:
 * it is restarted from the last committed offsets, and rows already marked are not claimed again.
 */
final class OutboxChangeConsumer implements DebeziumEngine.ChangeConsumer<RecordChangeEvent<SourceRecord>> {

    private final OutboxDispatcher dispatcher;
    private final String outboxTable;
    private final boolean markBeforeDispatch;
    private final AtomicLong rowsSeen = new AtomicLong();
    private final AtomicLong rowsSent = new AtomicLong();
    private final AtomicLong batches = new AtomicLong();

    /**
     * @param markBeforeDispatch the wrong order, for the negative control test only: the batch is
     *     marked processed (its offsets may be committed and its LSN confirmed) before its rows are
     *     dispatched, so a failure in between loses them to the log
     */
    OutboxChangeConsumer(OutboxDispatcher dispatcher, String outboxTable, boolean markBeforeDispatch) {
        this.dispatcher = dispatcher;
        this.outboxTable = outboxTable;
        this.markBeforeDispatch = markBeforeDispatch;
    }

    @Override
    public void handleBatch(
            List<RecordChangeEvent<SourceRecord>> records,
            DebeziumEngine.RecordCommitter<RecordChangeEvent<SourceRecord>> committer)
            throws InterruptedException {
        List<Long> ids = new ArrayList<>(records.size());
        for (RecordChangeEvent<SourceRecord> event : records) {
            Long id = insertedOutboxId(event.record());
            if (id != null) {
                ids.add(id);
            }
        }
        if (markBeforeDispatch) {
            markProcessed(records, committer);
        }
        if (!ids.isEmpty()) {
            DispatchResult result = dispatcher.dispatchAmong(ids);
            rowsSeen.addAndGet(ids.size());
            rowsSent.addAndGet(result.sent());
        }
        if (!markBeforeDispatch) {
            markProcessed(records, committer);
        }
        batches.incrementAndGet();
    }

    private static void markProcessed(
            List<RecordChangeEvent<SourceRecord>> records,
            DebeziumEngine.RecordCommitter<RecordChangeEvent<SourceRecord>> committer)
            throws InterruptedException {
        for (RecordChangeEvent<SourceRecord> event : records) {
            committer.markProcessed(event);
        }
        committer.markBatchFinished();
    }

    /** The outbox id of an INSERT into the outbox table; {@code null} for anything else (heartbeats). */
    @Nullable
    Long insertedOutboxId(@Nullable SourceRecord record) {
        if (record == null || !(record.value() instanceof Struct value)) {
            return null;
        }
        if (value.schema().field("op") == null || !"c".equals(value.getString("op"))) {
            return null;
        }
        Struct source = value.schema().field("source") == null ? null : value.getStruct("source");
        if (source == null || !outboxTable.equals(source.getString("table"))) {
            return null;
        }
        Struct after = value.getStruct("after");
        if (after == null) {
            return null;
        }
        Field id = after.schema().field("id");
        Object raw = id == null ? null : after.get(id);
        return raw instanceof Number number ? number.longValue() : null;
    }

    long rowsSeen() {
        return rowsSeen.get();
    }

    long rowsSent() {
        return rowsSent.get();
    }

    long batches() {
        return batches.get();
    }
}
