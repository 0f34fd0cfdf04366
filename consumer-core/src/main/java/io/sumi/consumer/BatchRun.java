package io.sumi.consumer;

import io.sumi.consumer.exception.BatchFailedException;
import org.jspecify.annotations.Nullable;

/**
 * How a batch call of either mode ended when nothing escaped it: the messages done, and where it
 * stopped. The dispatcher counts the done messages and turns a stop into the
 * {@link BatchFailedException} the caller sees.
 *
 * @param processed messages the handler processed and that are completed (or committed)
 * @param duplicates messages skipped as done before
 * @param stop the index of the first message not done; the batch's size if none
 * @param cause why the batch stopped at {@code stop}; {@code null} if it did not
 * @param reported the handler's own {@link BatchFailedException}, thrown on unchanged (lease mode), if any
 */
record BatchRun(
        int processed,
        int duplicates,
        int stop,
        @Nullable Throwable cause,
        @Nullable BatchFailedException reported) {

    static BatchRun stoppedAt(int stop, @Nullable Throwable cause) {
        return new BatchRun(0, 0, stop, cause, null);
    }
}
