package io.sumi.stream.internal;

import io.sumi.consumer.exception.BatchFailedException;
import org.springframework.kafka.listener.BatchListenerFailedException;

/**
 * Translation between the core's {@link BatchFailedException} and Spring Kafka's
 * {@link BatchListenerFailedException}, which the Kafka binder's listener container reads to
 * commit the records before the failed one and deliver the rest again. Loaded only when Spring
 * Kafka is on the class path.
 */
final class KafkaBatchFailures {

    private KafkaBatchFailures() {}

    /** The batch failure for the Kafka listener container: same index, same cause. */
    static RuntimeException toKafka(BatchFailedException ex, String where) {
        Throwable cause = ex.getCause() != null ? ex.getCause() : ex;
        return new BatchListenerFailedException(
                "Record at index " + ex.index() + " of the batch of " + where + " failed: " + cause.getMessage(),
                cause,
                ex.index());
    }

    /**
     * The index a function's own {@link BatchListenerFailedException} names (into the list the
     * function received), or {@code -1} if {@code ex} is not one or names no index.
     */
    static int failedIndex(Throwable ex) {
        return ex instanceof BatchListenerFailedException failed ? failed.getIndex() : -1;
    }
}
