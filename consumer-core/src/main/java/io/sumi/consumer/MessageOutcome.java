package io.sumi.consumer;

/**
 * What the executor did with a message that did not fail.
 */
public enum MessageOutcome {

    /** The handler ran and the ledger recorded the message completed. */
    PROCESSED,

    /** The ledger already had the message completed: the handler did not run. Acknowledge it. */
    DUPLICATE
}
