package io.sumi.consumer;

/**
 * What the executor did with a message that did not fail.
 */
public enum MessageOutcome {

    /** The handler ran and the ledger recorded the message completed. */
    PROCESSED,

    /** The ledger already had the message completed: the handler did not run. Acknowledge it. */
    DUPLICATE,

    /**
     * The handler ran and said the message is not done (a nack, see {@link NotDoneSignal}): its
     * claim was released (lease mode) or its transaction rolled back (transactional mode), never
     * completed; the broker delivers it again as the handler asked.
     *
     * @since 0.1.0
     */
    NOT_DONE
}
