package io.sumi.consumer;

import io.sumi.store.StoredReply;
import org.jspecify.annotations.Nullable;

/**
 * What a handler that keeps its replies ({@link IdempotentHandler#storeReply()}) answered, as
 * {@link IdempotentExecutor#executeReplying} passes it between the binder and the ledger.
 *
 * <p>The binder's body runs the handler and returns the reply object together with its encoded
 * form ({@link #of}); the executor keeps the encoded form with the ledger row. For a duplicate the
 * executor returns the reply read from the ledger ({@link #stored(StoredReply)}, no object): the
 * binder decodes it and hands it to the container as the listener's result, which sends it to the
 * new request's reply address with the new request's correlation id.
 *
 * @param value the object the handler returned ({@code null} when read back from the ledger)
 * @param stored the reply as the ledger keeps it, or {@code null} when the handler returned none
 * @since 0.1.0
 */
public record HandlerReply(@Nullable Object value, @Nullable StoredReply stored) {

    /** What the handler returned, and its encoded form ({@code null} only if {@code value} is). */
    public static HandlerReply of(@Nullable Object value, @Nullable StoredReply stored) {
        if (value != null && stored == null) {
            throw new IllegalArgumentException("A reply object needs its encoded form to be kept");
        }
        return new HandlerReply(value, stored);
    }

    /** A reply read back from the ledger for a duplicate. */
    public static HandlerReply stored(StoredReply stored) {
        return new HandlerReply(null, stored);
    }
}
