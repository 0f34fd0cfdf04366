package io.sumi.consumer.exception;

import io.sumi.consumer.IdempotentExecutor;

/**
 * A batch stopped at one message: the messages before {@link #index()} are done (completed or
 * duplicates), the message at {@code index} failed with {@link #getCause()}, and it and the
 * messages after it must be delivered again. Binders translate it to their broker's form (Spring
 * Kafka's {@code BatchListenerFailedException}).
 *
 * <p>A batch handler given to {@link IdempotentExecutor#executeBatch} throws it to say which
 * message failed, with {@code index} in the batch as the executor received it.
 */
public class BatchFailedException extends RuntimeException {

    private final int index;
    private final Throwable cause;

    public BatchFailedException(int index, Throwable cause) {
        super("Batch failed at index " + index + ": " + cause.getMessage(), cause);
        this.index = index;
        this.cause = cause;
    }

    /** The index, in the batch, of the first message not done. */
    public int index() {
        return index;
    }

    @Override
    public synchronized Throwable getCause() {
        // The constructor's cause; initCause cannot replace it (it refuses once a cause is set).
        return cause;
    }
}
