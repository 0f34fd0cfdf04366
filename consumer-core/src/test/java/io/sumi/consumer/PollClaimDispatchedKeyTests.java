package io.sumi.consumer;

import static org.assertj.core.api.Assertions.assertThat;

import io.sumi.store.MessageStatus;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * Issue 19, A6: the poll claim resolves every key of a poll before the container's per-record
 * {@code RecordInterceptor}s run, so an interceptor that rewrites a key header made one message
 * run under two keys (the poll's, or the dispatched record's without the poll claim and on a
 * redelivery outside the poll). The key a record runs under is the one of the record as it is
 * dispatched, on both paths: a record whose dispatched key differs from the claimed one takes the
 * executor's ordinary path under its dispatched key, and the claim of the old key is released
 * with the unrun ones.
 */
class PollClaimDispatchedKeyTests extends H2ExecutorTestSupport {

    private final List<String> ranUnder = new CopyOnWriteArrayList<>();

    @Test
    void aRecordWhoseKeyHeaderWasRewrittenBeforeItsDispatchRunsUnderTheDispatchedKey() throws Exception {
        PollClaim poll = executor.claimPoll(lease(), List.of(message("a"), message("b")));
        assertThat(poll).isNotNull();
        IdempotentExecutor.HandlerBody<Object> body = () -> {
            ranUnder.add(IdempotencyContext.current().key());
            return null;
        };

        // A RecordInterceptor rewrote the first record's key header to "a2" before its dispatch.
        assertThat(poll.execute(0, message("a2"), body).outcome()).isEqualTo(MessageOutcome.PROCESSED);
        assertThat(poll.execute(1, message("b"), body).outcome()).isEqualTo(MessageOutcome.PROCESSED);
        poll.completePending();
        poll.releaseUnrun();

        assertThat(ranUnder).containsExactly("a2", "b");
        assertThat(status("a2")).isEqualTo(MessageStatus.COMPLETED);
        assertThat(status("b")).isEqualTo(MessageStatus.COMPLETED);
        // The poll's claim of the key the record no longer has is given back unrun, not completed:
        // the row the claim inserted is gone, no attempt counted (issue 19 A1).
        assertThat(row("a")).isEmpty();
    }
}
