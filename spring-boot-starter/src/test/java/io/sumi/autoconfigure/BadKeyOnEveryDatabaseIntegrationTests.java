package io.sumi.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sumi.consumer.HandlerDefinition;
import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentExecutor;
import io.sumi.consumer.InboundMessage;
import io.sumi.consumer.MessageOutcome;
import io.sumi.consumer.exception.InvalidIdempotencyKeyException;
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
 * The key rows of the bad-input table on every database, through the executor as a listener sees
 * them (the Kafka table runs on PostgreSQL only): a key with a trailing space is another key than
 * the one without; a key containing NUL is refused at once with a clear, non-retryable error, the
 * same on every database (PostgreSQL cannot store it; a key that works on H2 in tests must not fail
 * in production). The store's own contract for these keys is in {@code ProcessedMessageStoreContract}
 * ({@code keysThatDifferOnlyInTrailingSpacesAreDistinctKeys}, {@code aKeyWithANulCharacterIsRejectedClearlyNotStored}).
 */
class BadKeyOnEveryDatabaseIntegrationTests {

    static final Duration LEASE = Duration.ofMinutes(5);

    @ParameterizedTest(name = "{0}")
    @EnumSource(TestDatabase.class)
    void aKeyWithATrailingSpaceIsAnotherKeyThanTheOneWithout(TestDatabase database) throws Exception {
        JdbcProcessedMessageStore store =
                JdbcProcessedMessageStore.builder(database.dataSource()).build();
        String consumer = "bad-key-" + UUID.randomUUID();
        try {
            IdempotentExecutor executor = IdempotentExecutor.builder(store).build();
            HandlerDefinition handler = HandlerDefinition.builder(consumer)
                    .mode(IdempotencyMode.LEASE)
                    .lease(LEASE)
                    .build();
            List<String> runs = new ArrayList<>();
            List<MessageOutcome> outcomes = new ArrayList<>();
            for (String key : List.of("k", "k ", "k", "k ")) {
                outcomes.add(executor.execute(handler, message(key), () -> runs.add(key))
                        .outcome());
            }
            assertThat(runs).containsExactly("k", "k ");
            assertThat(outcomes)
                    .containsExactly(
                            MessageOutcome.PROCESSED,
                            MessageOutcome.PROCESSED,
                            MessageOutcome.DUPLICATE,
                            MessageOutcome.DUPLICATE);
            assertThat(store.find(consumer, "k ")).get().satisfies(row -> {
                assertThat(row.messageId()).isEqualTo("k ");
                assertThat(row.status()).isEqualTo(MessageStatus.COMPLETED);
            });
            assertThat(new JdbcTemplate(database.dataSource())
                            .queryForList(
                                    "SELECT message_id FROM processed_messages WHERE consumer = ?",
                                    String.class,
                                    consumer))
                    .containsExactlyInAnyOrder("k", "k ");
        } finally {
            new JdbcTemplate(database.dataSource())
                    .update("DELETE FROM processed_messages WHERE consumer = ?", consumer);
        }
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(TestDatabase.class)
    void aKeyContainingNulIsRefusedAtOnceOnEveryDatabase(TestDatabase database) throws Exception {
        JdbcProcessedMessageStore store =
                JdbcProcessedMessageStore.builder(database.dataSource()).build();
        String consumer = "bad-key-" + UUID.randomUUID();
        try {
            IdempotentExecutor executor = IdempotentExecutor.builder(store).build();
            for (IdempotencyMode mode : List.of(IdempotencyMode.LEASE, IdempotencyMode.AUTO)) {
                HandlerDefinition handler = HandlerDefinition.builder(consumer)
                        .mode(mode)
                        .lease(LEASE)
                        .build();
                List<String> runs = new ArrayList<>();
                assertThatThrownBy(() -> executor.execute(handler, message("a\u0000b"), () -> runs.add("ran")))
                        .as("%s mode", mode)
                        .isInstanceOf(InvalidIdempotencyKeyException.class)
                        .satisfies(ex -> assertThat(((InvalidIdempotencyKeyException) ex).isRetryable())
                                .isFalse())
                        .hasMessageContaining("NUL character (U+0000)");
                assertThat(runs).isEmpty();
            }
            assertThat(new JdbcTemplate(database.dataSource())
                            .queryForObject(
                                    "SELECT COUNT(*) FROM processed_messages WHERE consumer = ?",
                                    Integer.class,
                                    consumer))
                    .isZero();
            // The key without the NUL is unaffected, and is not taken for it.
            HandlerDefinition handler = HandlerDefinition.builder(consumer)
                    .mode(IdempotencyMode.LEASE)
                    .lease(LEASE)
                    .build();
            assertThat(executor.execute(handler, message("ab"), () -> "ran").outcome())
                    .isEqualTo(MessageOutcome.PROCESSED);
            assertThat(store.find(consumer, "ab"))
                    .get()
                    .extracting(ProcessedMessage::status)
                    .isEqualTo(MessageStatus.COMPLETED);
        } finally {
            new JdbcTemplate(database.dataSource())
                    .update("DELETE FROM processed_messages WHERE consumer = ?", consumer);
        }
    }

    static InboundMessage message(String key) {
        return InboundMessage.of("payload", Map.of(HandlerDefinition.IDEMPOTENCY_KEY_HEADER, key));
    }
}
