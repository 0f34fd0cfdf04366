package io.sumi.outbox.rabbit;

/**
 * RabbitMQ returned a mandatory message: its exchange routed it to no queue. The row is not marked
 * dispatched (a silent drop would lose it); it is retried with the dispatcher's backoff and parked
 * after {@code maxAttempts}, so a missing binding shows up as failures and parked rows.
 */
public class UnroutableMessageException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    public UnroutableMessageException(String message) {
        super(message);
    }
}
