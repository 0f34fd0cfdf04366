package io.sumi.consumer;

import io.sumi.consumer.exception.ReplyTooLargeException;
import io.sumi.store.ProcessedMessageStore;
import io.sumi.store.StoredReply;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * The replies of handlers that keep them ({@link HandlerDefinition#storeReply()}), shared by both
 * modes: which reply a run keeps (and whether it fits), and what a duplicate is answered with.
 * The modes write the reply where they complete the row: lease mode in the completing statement,
 * transactional mode in the handler's transaction.
 */
final class KeptReplies {

    private final ProcessedMessageStore store;
    private final OutcomeRecorder recorder;

    KeptReplies(ProcessedMessageStore store, OutcomeRecorder recorder) {
        this.store = store;
        this.recorder = recorder;
    }

    /**
     * The reply to keep with the row of a run that returned {@code value}: {@code null} when the
     * handler keeps no replies or returned none.
     *
     * @throws ReplyTooLargeException if the reply is larger than the handler's limit (the caller
     *     treats it as the handler's failure: released or rolled back, never completed)
     */
    @Nullable
    StoredReply toKeep(HandlerDefinition handler, String key, @Nullable Object value) {
        if (!handler.storeReply() || value == null) {
            return null;
        }
        if (!(value instanceof HandlerReply reply)) {
            throw new IllegalStateException("The handler of consumer '" + handler.consumer()
                    + "' keeps its replies, but its binder ran it without IdempotentExecutor.executeReplying"
                    + " (it returned a " + value.getClass().getName() + ", not a HandlerReply)");
        }
        StoredReply stored = reply.stored();
        if (stored != null && stored.size() > handler.maxReplySize()) {
            recorder.reply(handler.consumer(), "too_large");
            throw new ReplyTooLargeException(
                    "The reply to message '" + key + "' of consumer '" + handler.consumer() + "' is " + stored.size()
                            + " bytes; the ledger keeps replies of at most " + handler.maxReplySize()
                            + " bytes (sumi.consumer.reply.max-size). The message is not completed and its reply is not sent,"
                            + " so that no duplicate of it is left without an answer: raise the limit, or reply with less"
                            + " (an id the requester can look up)",
                    stored.size(),
                    handler.maxReplySize());
        }
        return stored;
    }

    /** Counts a reply written with its row. */
    void kept(HandlerDefinition handler, @Nullable StoredReply stored) {
        if (stored != null) {
            recorder.reply(handler.consumer(), "stored");
        }
    }

    /**
     * The result of a duplicate: for a handler that keeps replies, the reply its row has (read
     * from the ledger, in the caller's transaction if any), or none if the row has none.
     */
    <T> HandlerResult<T> duplicate(HandlerDefinition handler, String key) {
        if (!handler.storeReply()) {
            return HandlerResult.duplicate();
        }
        Optional<StoredReply> stored = store.findReply(handler.consumer(), key);
        recorder.reply(handler.consumer(), stored.isPresent() ? "replayed" : "missing");
        // executeReplying's contract: the body of a handler that keeps replies returns HandlerReply.
        @SuppressWarnings("unchecked")
        T value = (T) stored.map(HandlerReply::stored).orElse(null);
        return new HandlerResult<>(MessageOutcome.DUPLICATE, value);
    }
}
