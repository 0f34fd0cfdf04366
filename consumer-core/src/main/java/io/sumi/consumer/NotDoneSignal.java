package io.sumi.consumer;

import org.jspecify.annotations.Nullable;

/**
 * What a handler body throws to tell the executor that its handler returned but said its message
 * is <em>not done</em>: it asked the broker to deliver the message again instead of acknowledging
 * it (Spring Kafka's {@code Acknowledgment.nack()}, a RabbitMQ {@code basicNack} / {@code basicReject}
 * with requeue, a JMS session recover). Binders throw it from the body they give the executor,
 * after the listener returned, when they saw such a call; handlers never throw it themselves.
 *
 * <p>A nacked message has not succeeded, so the executor treats it as it treats a failure of the
 * handler, except that nothing is thrown to the container (which settles the nack itself):
 * <ul>
 *   <li>lease mode: the claim is released (not completed), so the redelivery claims and runs it;</li>
 *   <li>transactional mode: the handler's transaction is rolled back, the ledger row with it (the
 *   redelivery runs the handler again, so its rows must not stay either); in a transaction of the
 *   caller's that the executor joined, that transaction is marked rollback-only, as an exception
 *   of the handler marks it;</li>
 *   <li>the call returns normally: {@link IdempotentExecutor#execute} with
 *   {@link MessageOutcome#NOT_DONE} and {@link #value()} as the value;
 *   {@link IdempotentExecutor#executeBatch} with {@link BatchResult#notDoneFrom()} =
 *   {@link #index()}: the messages before it are done (completed), it and the ones after it are
 *   not (released, or rolled back);</li>
 *   <li>{@code sumi.messages} counts it with outcome {@code not_done} (a batch: once per nacking run).</li>
 * </ul>
 *
 * <p>Cheap to throw: no stack trace is filled in.
 *
 * @since 0.1.0
 */
public final class NotDoneSignal extends Exception {

    private final int index;
    private final transient @Nullable Object value;

    private NotDoneSignal(int index, @Nullable Object value) {
        super(
                index < 0
                        ? "the handler said the message is not done (a nack): delivered again"
                        : "the handler said the messages from index " + index + " of the batch are not done (a nack)",
                null,
                false,
                false);
        this.index = index;
        this.value = value;
    }

    /** A single message is not done; {@code value} is what the handler returned. */
    public static NotDoneSignal of(@Nullable Object value) {
        return new NotDoneSignal(-1, value);
    }

    /**
     * The messages of a batch from {@code index} on (an index into the batch given to
     * {@link IdempotentExecutor#executeBatch}) are not done; the ones before it are.
     *
     * @throws IllegalArgumentException if {@code index} is negative
     */
    public static NotDoneSignal from(int index) {
        if (index < 0) {
            throw new IllegalArgumentException("index must not be negative, was " + index);
        }
        return new NotDoneSignal(index, null);
    }

    /** The first message of the batch not done; -1 for a single message. */
    public int index() {
        return index;
    }

    /** What the handler returned (a single message); {@code null} for a batch. */
    public @Nullable Object value() {
        return value;
    }
}
