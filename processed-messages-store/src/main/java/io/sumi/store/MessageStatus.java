package io.sumi.store;

/**
 * The status of a ledger row.
 */
public enum MessageStatus {

    /** A consumer holds a lease on the message and is running its handler. */
    IN_PROGRESS,

    /** The handler completed; every later delivery of the message is a duplicate. */
    COMPLETED
}
