package io.sumi.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sumi.consumer.exception.MessageBusyException;
import io.sumi.store.ClaimOutcome;
import io.sumi.store.ClaimRequest;
import io.sumi.store.ClaimResult;
import io.sumi.store.MessageStatus;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Issue 23: copies of a message on other partitions a few records apart reach two consumers at
 * once. A record whose key another consumer held at its poll's claim writes the poll's kept
 * completions before it waits for the holder (so a consumer waiting for one of them goes on), and,
 * still BUSY, gives back the claims of the records after it at once: the error handler seeks them
 * back and waits its busy-retry interval, during which they were held for nothing and made the
 * other consumers' copies of them BUSY in turn.
 */
class PollClaimBusyKeyTests extends H2ExecutorTestSupport {

    @Test
    void aBusyRecordCompletesWhatRanAndGivesBackTheClaimsAfterItAtOnce() throws Exception {
        // Another consumer of the namespace holds "b" (its own poll, say).
        ClaimResult other = store.claim(consumer, new ClaimRequest("b", null), Duration.ofMinutes(5));
        assertThat(other.outcome()).isEqualTo(ClaimOutcome.CLAIMED);
        PollClaim poll = executor.claimPoll(lease(), List.of(message("a"), message("b"), message("c")));
        assertThat(poll).isNotNull();
        assertThat(status("c")).isEqualTo(MessageStatus.IN_PROGRESS);

        assertThat(poll.execute(0, message("a"), () -> null).outcome()).isEqualTo(MessageOutcome.PROCESSED);
        assertThatThrownBy(() -> poll.execute(1, message("b"), () -> null)).isInstanceOf(MessageBusyException.class);

        // Before the poll ends: "a" is completed, "c" (claimed with the poll, never run) is given back.
        assertThat(status("a")).isEqualTo(MessageStatus.COMPLETED);
        assertThat(row("c"))
                .as("the claim of c, given back unrun, leaves no row")
                .isEmpty();
        assertThat(status("b")).isEqualTo(MessageStatus.IN_PROGRESS);

        poll.completePending();
        poll.releaseUnrun();
        assertThat(row("c")).isEmpty();
        assertThat(row("b"))
                .get()
                .extracting(row -> row.claimToken())
                .isEqualTo(other.message().claimToken());
    }

    @Test
    void aRecordWhoseHolderCompletesMeanwhileIsADuplicateNotBusy() throws Exception {
        ClaimResult other = store.claim(consumer, new ClaimRequest("b", null), Duration.ofMinutes(5));
        PollClaim poll = executor.claimPoll(lease(), List.of(message("a"), message("b")));
        assertThat(poll).isNotNull();
        assertThat(poll.execute(0, message("a"), () -> null).outcome()).isEqualTo(MessageOutcome.PROCESSED);

        store.complete(other.message()); // the holder's poll ends

        assertThat(poll.execute(1, message("b"), () -> null).outcome()).isEqualTo(MessageOutcome.DUPLICATE);
        poll.completePending();
        poll.releaseUnrun();
        assertThat(status("a")).isEqualTo(MessageStatus.COMPLETED);
    }
}
