package io.sumi.outbox;

/**
 * How a dispatched row left the outbox, stored in its {@code dispatch_outcome} column.
 */
public enum DispatchOutcome {

    /** Sent to the broker and acknowledged. */
    SENT,

    /** Shadow mode: recorded as dispatched without being sent. */
    SHADOW,

    /** Created before the cutoff: recorded as dispatched without being sent. */
    SKIPPED
}
