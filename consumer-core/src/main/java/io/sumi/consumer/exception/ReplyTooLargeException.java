package io.sumi.consumer.exception;

/**
 * The reply of a handler that keeps its replies ({@code @IdempotentHandler(storeReply = true)}) is
 * larger than the ledger takes ({@code sumi.consumer.reply.max-size}). The message is not
 * completed (lease mode: its claim is released; transactional mode: the handler's transaction
 * rolls back) and its reply is not sent, so no completed row ever lacks the reply a duplicate
 * would need. Not retryable: the same request gives the same reply, so the message goes to the
 * dead-letter destination at once. Raise the limit, or make the reply smaller (return an id the
 * requester can look up instead of the data).
 *
 * @since 0.1.0
 */
public class ReplyTooLargeException extends IdempotencyException {

    private final int size;
    private final int maxSize;

    public ReplyTooLargeException(String message, int size, int maxSize) {
        super(message);
        this.size = size;
        this.maxSize = maxSize;
    }

    /** The reply's size in the ledger, in bytes. */
    public int size() {
        return size;
    }

    /** The limit it exceeded, in bytes. */
    public int maxSize() {
        return maxSize;
    }

    /** {@link Verdict#REJECT}. */
    @Override
    public Verdict verdict() {
        return Verdict.REJECT;
    }

    @Override
    public boolean isRetryable() {
        return false;
    }
}
