package io.sumi.consumer;

import io.sumi.consumer.IdempotentExecutor.HandlerBody;

/**
 * The lease-mode claims of the messages a listener container has already fetched (a Kafka poll),
 * taken in one round trip by {@link IdempotentExecutor#claimPoll} before the first of them runs.
 * Each message then runs against its claim ({@link #execute}); the completions of the ones that ran
 * are kept and written in one statement by {@link #completePending()}, which the binder calls
 * before the container commits the messages' offsets (a crash before that redelivers them, exactly
 * as a crash between a handler and its completion does). {@link #releaseUnrun()} gives back the
 * claims of messages that were not run (an earlier message failed and the container sought back, a
 * rebalance, a stop) and ends the poll: until then, the claims not yet completed or released are
 * renewed as a running handler's are ({@link IdempotentExecutor.Builder#leaseRenewal}, up to the
 * handler's max run time counted from the poll's claim).
 *
 * <p>Used by one thread (the container's consumer thread). A message whose claim is not usable
 * (no valid key, a live claim elsewhere when the poll was claimed, a row awaiting reconciliation,
 * a claim released after a failure) takes the executor's ordinary path: its refusal or its
 * claim is exactly what {@link IdempotentExecutor#execute} does.
 *
 * @since 0.1.0
 */
public interface PollClaim {

    /**
     * Runs {@code body} for the message at {@code index} of the poll unless it is done: as
     * {@link IdempotentExecutor#execute}, except that a claimed message's completion is only kept,
     * not written, and a key that already ran in this poll is a duplicate.
     */
    <T> HandlerResult<T> execute(int index, HandlerBody<T> body) throws Exception;

    /**
     * Runs {@code body} for the message at {@code index} as the container dispatches it:
     * {@code dispatched} is that message after the container's per-record interceptors, which may
     * have rewritten its key headers since the poll was claimed. Its key is resolved again; if it
     * differs from the key the poll claimed, the message takes the executor's ordinary path under
     * its dispatched key (the claim of the old key is released with the unrun ones by
     * {@link #releaseUnrun()}), so a message runs under one key: the one it has without the poll
     * claim. Otherwise as {@link #execute(int, HandlerBody)}. This default ignores {@code dispatched}.
     *
     * @since 0.1.0
     */
    default <T> HandlerResult<T> execute(int index, InboundMessage dispatched, HandlerBody<T> body) throws Exception {
        return execute(index, body);
    }

    /**
     * Writes the kept completions in one statement (tried twice); a failure is thrown and they stay
     * kept, so the offsets must not be committed then.
     *
     * @return how many completions were written
     */
    int completePending();

    /**
     * Gives back the claims of messages not run yet, in one statement, without counting an attempt
     * for them ({@link io.sumi.store.ProcessedMessageStore#releaseUnrun}), and ends the poll; a
     * ledger failure is logged (the leases then expire).
     */
    void releaseUnrun();

    /**
     * Ends the poll without a ledger call, for a consumer that must shut down while the ledger
     * cannot be reached: renewal stops (a renewal in flight is waited for), the kept completions
     * are dropped and every claim not completed yet is left to lapse when its lease ends. The
     * caller must not commit the offset of any message of the poll whose completion was not
     * written: its redelivery takes the lapsed claim over and runs it again.
     *
     * @since 0.1.0
     */
    default void abandon() {
        releaseUnrun();
    }
}
