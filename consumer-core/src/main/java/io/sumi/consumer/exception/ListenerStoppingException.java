package io.sumi.consumer.exception;

import org.jspecify.annotations.Nullable;

/**
 * The listener's container was asked to stop (a binding's or container's stop, the application's
 * close) while the message was being handled, and the message did not succeed: its handler
 * failed (work cut short by the stop), or Sumi could not settle it with the ledger and its hold
 * ended with the stop, or it was not run at all because the stop had already been asked (a
 * binder's retry after the stop). The message is left <em>unsettled</em>: neither acknowledged
 * nor dead-lettered, and its ledger row is left as it is (a released claim, or a lease that
 * lapses), so that the broker delivers it again once a consumer runs (after the restart, or to
 * the consumer the rebalance gives it) and it runs then, with its key.
 *
 * <p>A binder that sees it must neither retry it in place (the stop is not the message's fault, and
 * every retry would meet the same stop) nor give it to a recoverer or dead-letter destination;
 * it leaves the message for redelivery (Kafka: the error handler seeks back, no offset is
 * committed). The message's own failure, if any, is the cause.
 *
 * @since 0.1.0
 */
public class ListenerStoppingException extends IdempotencyException {

    private final String consumer;

    /**
     * @param consumer the consumer whose message was interrupted
     * @param cause the message's failure, or {@code null} if it was not run (the stop came first)
     */
    public ListenerStoppingException(String consumer, @Nullable Throwable cause) {
        super("The listener of consumer '" + consumer + "' is stopping: "
                + (cause == null
                        ? "the message was not run"
                        : "the message's attempt did not succeed ("
                                + cause.getClass().getName()
                                + (cause.getMessage() != null ? ": " + cause.getMessage() : "") + ")")
                + "; it is left unsettled and delivered again once a consumer runs");
        if (cause != null) {
            initCause(cause);
        }
        this.consumer = consumer;
    }

    /** The consumer whose message was interrupted. */
    public String consumer() {
        return consumer;
    }

    /** {@code true}: the message runs again once delivered again (after the restart), never dead-lettered. */
    @Override
    public boolean isRetryable() {
        return true;
    }
}
