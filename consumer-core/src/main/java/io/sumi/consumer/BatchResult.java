package io.sumi.consumer;

/**
 * The result of an {@link IdempotentExecutor#executeBatch} call that did not fail.
 *
 * @param processed how many messages the handler processed
 * @param duplicates how many messages were skipped as already completed (or repeated in the batch)
 * @param notDoneFrom the index of the first message the handler said is not done (a nack, see
 *     {@link NotDoneSignal#from}): it and the messages after it were released or rolled back, the
 *     ones before it are done; -1 when every message is done
 */
public record BatchResult(int processed, int duplicates, int notDoneFrom) {

    /** A batch whose every message is done. */
    public BatchResult(int processed, int duplicates) {
        this(processed, duplicates, -1);
    }

    /** Whether every message of the batch is done (none was nacked). */
    public boolean allDone() {
        return notDoneFrom < 0;
    }
}
