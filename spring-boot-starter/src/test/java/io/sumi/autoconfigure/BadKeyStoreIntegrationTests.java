package io.sumi.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sumi.consumer.HandlerDefinition;
import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentExecutor;
import io.sumi.consumer.InboundMessage;
import io.sumi.consumer.InvalidIdempotencyKeyException;
import io.sumi.consumer.MessageOutcome;
import io.sumi.store.ClaimOutcome;
import io.sumi.store.ClaimRequest;
import io.sumi.store.ClaimResult;
import io.sumi.store.MessageStatus;
import io.sumi.store.ProcessedMessage;
import io.sumi.store.jdbc.JdbcProcessedMessageStore;
import io.sumi.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The store-level rows of the bad-input table, on every database: a key with a trailing space is
 * another key than the one without, losslessly (MariaDB's PAD SPACE collations compare them
 * equal); a key containing NUL is refused at once with a clear, non-retryable error (PostgreSQL
 * cannot store it, and a key that works on one database must not fail on another).
 */
class BadKeyStoreIntegrationTests {

    static final Duration LEASE = Duration.ofMinutes(5);

    @ParameterizedTest(name = "{0}")
    @EnumSource(TestDatabase.class)
    void aKeyWithATrailingSpaceIsAnotherKeyThanTheOneWithout(TestDatabase database) throws Exception {
        JdbcProcessedMessageStore store = JdbcProcessedMessageStore.builder(database.dataSource()).build();
        String consumer = "bad-key-store-" + UUID.randomUUID();
        try {
            ClaimResult plain = store.claim(consumer, new ClaimRequest("k", null), LEASE);
            assertThat(plain.outcome()).isEqualTo(ClaimOutcome.CLAIMED);
            assertThat(store.complete(plain.message())).isTrue();

            ClaimResult spaced = store.claim(consumer, new ClaimRequest("k ", null), LEASE);
            assertThat(spaced.outcome()).as("'k ' is a key of its own").isEqualTo(ClaimOutcome.CLAIMED);
            assertThat(spaced.message().messageId()).isEqualTo("k ");
            assertThat(store.complete(spaced.message())).isTrue();

            assertThat(store.find(consumer, "k")).get().extracting(ProcessedMessage::messageId).isEqualTo("k");
            assertThat(store.find(consumer, "k ")).get().extracting(ProcessedMessage::messageId).isEqualTo("k ");
            assertThat(store.find(consumer, "k  ")).as("and 'k  ' is a third one").isEmpty();
            assertThat(new JdbcTemplate(database.dataSource()).queryForList(
                    "SELECT message_id FROM processed_messages WHERE consumer = ?", String.class, consumer))
                    .containsExactlyInAnyOrder("k", "k ");

            // Through the executor, as a listener sees it: both run, once each.
            IdempotentExecutor executor = IdempotentExecutor.builder(store).build();
            HandlerDefinition handler = HandlerDefinition.builder(consumer + "-executor").mode(IdempotencyMode.LEASE).lease(LEASE).build();
            List<String> runs = new ArrayList<>();
            for (String key : List.of("e", "e ", "e", "e ")) {
                executor.execute(handler, message(key), () -> runs.add(key));
            }
            assertThat(runs).containsExactly("e", "e ");
            assertThat(store.find(handler.consumer(), "e ")).get().extracting(ProcessedMessage::status).isEqualTo(MessageStatus.COMPLETED);
        }
        finally {
            new JdbcTemplate(database.dataSource()).update("DELETE FROM processed_messages WHERE consumer LIKE ?", consumer + "%");
        }
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(TestDatabase.class)
    void aKeyContainingNulIsRefusedAtOnceOnEveryDatabase(TestDatabase database) throws Exception {
        JdbcProcessedMessageStore store = JdbcProcessedMessageStore.builder(database.dataSource()).build();
        String consumer = "bad-key-store-" + UUID.randomUUID();
        try {
            IdempotentExecutor executor = IdempotentExecutor.builder(store).build();
            for (IdempotencyMode mode : List.of(IdempotencyMode.LEASE, IdempotencyMode.AUTO)) {
                HandlerDefinition handler = HandlerDefinition.builder(consumer).mode(mode).lease(LEASE).build();
                List<String> runs = new ArrayList<>();
                assertThatThrownBy(() -> executor.execute(handler, message("a\u0000b"), () -> runs.add("ran")))
                        .as("%s mode", mode)
                        .isInstanceOf(InvalidIdempotencyKeyException.class)
                        .satisfies(ex -> assertThat(((InvalidIdempotencyKeyException) ex).isRetryable()).isFalse())
                        .satisfies(ex -> assertThat(ex.getMessage()).containsAnyOf("NUL", "U+0000", "\\u0000"));
                assertThat(runs).isEmpty();
            }
            // The store itself refuses it too, like any key it cannot hold.
            assertThatThrownBy(() -> store.claim(consumer, new ClaimRequest("a\u0000b", null), LEASE))
                    .isInstanceOf(IllegalArgumentException.class);
            assertThat(new JdbcTemplate(database.dataSource()).queryForObject(
                    "SELECT COUNT(*) FROM processed_messages WHERE consumer = ?", Integer.class, consumer)).isZero();
            // The key without the NUL is unaffected.
            HandlerDefinition handler = HandlerDefinition.builder(consumer).mode(IdempotencyMode.LEASE).lease(LEASE).build();
            assertThat(executor.execute(handler, message("ab"), () -> "ran").outcome()).isEqualTo(MessageOutcome.PROCESSED);
        }
        finally {
            new JdbcTemplate(database.dataSource()).update("DELETE FROM processed_messages WHERE consumer = ?", consumer);
        }
    }

    static InboundMessage message(String key) {
        return InboundMessage.of("payload", Map.of(HandlerDefinition.IDEMPOTENCY_KEY_HEADER, key));
    }
}
