package io.sumi.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sumi.consumer.exception.MessageBusyException;
import io.sumi.consumer.exception.ReplyTooLargeException;
import io.sumi.store.MessageStatus;
import io.sumi.store.StoredReply;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Handlers that keep their replies ({@link HandlerDefinition#storeReply()}): the reply is written
 * with the completion, a duplicate gets it back, a busy key stays busy, and a reply over the limit
 * fails the message before anything is completed.
 */
class KeptReplyTests extends H2ExecutorTestSupport {

    final AtomicInteger runs = new AtomicInteger();

    static StoredReply encoded(String text) {
        return new StoredReply(text.getBytes(StandardCharsets.UTF_8), Map.of("kind", "text"));
    }

    HandlerReply answer(String text) {
        runs.incrementAndGet();
        return HandlerReply.of(text, encoded(text));
    }

    HandlerDefinition keeping(IdempotencyMode mode) {
        return definition(mode).storeReply(true).maxReplySize(256).build();
    }

    @Test
    void leaseModeKeepsTheReplyWithTheCompletionAndAnswersTheDuplicateWithIt() throws Exception {
        HandlerDefinition handler = keeping(IdempotencyMode.LEASE);

        HandlerResult<HandlerReply> first = executor.executeReplying(handler, message("q-1"), () -> answer("quote 42"));
        HandlerResult<HandlerReply> second =
                executor.executeReplying(handler, message("q-1"), () -> answer("quote 43"));

        assertThat(first.outcome()).isEqualTo(MessageOutcome.PROCESSED);
        assertThat(first.value().value()).isEqualTo("quote 42");
        assertThat(second.outcome()).isEqualTo(MessageOutcome.DUPLICATE);
        assertThat(second.value()).isEqualTo(HandlerReply.stored(encoded("quote 42")));
        assertThat(runs).hasValue(1);
        assertThat(row("q-1").orElseThrow().status()).isEqualTo(MessageStatus.COMPLETED);
        assertThat(meters.get("sumi.replies").tag("result", "stored").counter().count())
                .isEqualTo(1);
        assertThat(meters.get("sumi.replies")
                        .tag("result", "replayed")
                        .counter()
                        .count())
                .isEqualTo(1);
    }

    @Test
    void transactionalModeKeepsTheReplyInTheHandlersTransaction() throws Exception {
        HandlerDefinition handler = keeping(IdempotencyMode.TRANSACTIONAL);

        executor.executeReplying(handler, message("q-2"), () -> answer("quote 7"));
        HandlerResult<HandlerReply> second = executor.executeReplying(handler, message("q-2"), () -> answer("x"));

        assertThat(second.outcome()).isEqualTo(MessageOutcome.DUPLICATE);
        assertThat(second.value()).isEqualTo(HandlerReply.stored(encoded("quote 7")));
        assertThat(runs).hasValue(1);
    }

    /** The negative control: the same handler without storeReply answers its duplicate with nothing. */
    @Test
    void withoutStoreReplyADuplicateGetsNothing() throws Exception {
        executor.execute(lease(), message("q-3"), () -> answer("quote 1"));

        HandlerResult<HandlerReply> second = executor.execute(lease(), message("q-3"), () -> answer("quote 2"));

        assertThat(second.outcome()).isEqualTo(MessageOutcome.DUPLICATE);
        assertThat(second.value()).isNull();
        assertThatIllegalArgumentException()
                .isThrownBy(() -> executor.executeReplying(lease(), message("q-3"), () -> answer("quote 3")));
    }

    @Test
    void aDuplicateOfARowCompletedWithoutAReplyGetsNothing() throws Exception {
        executor.execute(lease(), message("q-4"), () -> "done before replies were kept");

        HandlerResult<HandlerReply> second =
                executor.executeReplying(keeping(IdempotencyMode.LEASE), message("q-4"), () -> answer("late"));

        assertThat(second.outcome()).isEqualTo(MessageOutcome.DUPLICATE);
        assertThat(second.value()).isNull();
        assertThat(runs).hasValue(0);
        assertThat(meters.get("sumi.replies").tag("result", "missing").counter().count())
                .isEqualTo(1);
    }

    @Test
    void aKeyRunningElsewhereIsBusyNotAnsweredWithoutAReply() {
        HandlerDefinition handler = keeping(IdempotencyMode.LEASE);
        store.claim(handler.consumer(), new io.sumi.store.ClaimRequest("q-5", null), LEASE);

        assertThatThrownBy(() -> executor.executeReplying(handler, message("q-5"), () -> answer("x")))
                .isInstanceOf(MessageBusyException.class);
        assertThat(runs).hasValue(0);
    }

    @Test
    void aReplyOverTheLimitFailsTheLeaseModeMessageAndReleasesItsClaim() {
        HandlerDefinition handler = keeping(IdempotencyMode.LEASE);

        assertThatThrownBy(() -> executor.executeReplying(handler, message("q-6"), () -> answer("y".repeat(300))))
                .isInstanceOfSatisfying(ReplyTooLargeException.class, ex -> {
                    assertThat(ex.isRetryable()).isFalse();
                    assertThat(ex.maxSize()).isEqualTo(256);
                    assertThat(ex.size()).isGreaterThan(300);
                });

        assertThat(row("q-6").orElseThrow().status()).isEqualTo(MessageStatus.IN_PROGRESS);
        assertThat(row("q-6").orElseThrow().leaseUntil()).isBeforeOrEqualTo(ledgerNow());
        assertThat(store.findReply(handler.consumer(), "q-6")).isEmpty();
    }

    @Test
    void aReplyOverTheLimitRollsTheTransactionalMessageBack() {
        HandlerDefinition handler = keeping(IdempotencyMode.TRANSACTIONAL);

        assertThatThrownBy(() -> executor.executeReplying(handler, message("q-7"), () -> answer("y".repeat(300))))
                .isInstanceOf(ReplyTooLargeException.class);

        assertThat(row("q-7")).isEmpty();
    }

    @Test
    void batchesAndPollClaimsDoNotTakeHandlersThatKeepReplies() {
        HandlerDefinition handler = keeping(IdempotencyMode.LEASE);

        assertThatIllegalArgumentException()
                .isThrownBy(() -> executor.executeBatch(handler, List.of(message("b-1")), indexes -> {}));
        assertThat(executor.claimPoll(handler, List.of(message("b-2")))).isNull();
        assertThat(row("b-2")).isEmpty();
    }
}
