package io.sumi.consumer.exception;

/**
 * Another consumer holds a live lease on the message's key. Retryable: do not acknowledge the
 * message; deliver it again later, when the other consumer has completed it (it is then a
 * duplicate) or released it (it is then claimed and run).
 */
public class MessageBusyException extends IdempotencyException {

    public MessageBusyException(String message) {
        super(message);
    }

    @Override
    public boolean isRetryable() {
        return true;
    }
}
