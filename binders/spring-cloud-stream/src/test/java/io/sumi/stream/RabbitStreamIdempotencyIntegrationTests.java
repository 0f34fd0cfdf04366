package io.sumi.stream;

import static io.sumi.stream.Effects.header;
import static io.sumi.stream.Effects.payload;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.sumi.consumer.IdempotencyContext;
import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentHandler;
import io.sumi.consumer.exception.MissingIdempotencyKeyException;
import io.sumi.store.ClaimOutcome;
import io.sumi.store.ClaimRequest;
import io.sumi.store.ClaimResult;
import io.sumi.store.MessageStatus;
import io.sumi.testing.TestDatabase;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.amqp.core.AmqpAdmin;
import org.springframework.amqp.core.MessageProperties;
import org.springframework.amqp.rabbit.core.RabbitTemplate;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.cloud.stream.binding.BindingsLifecycleController;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.messaging.Message;
import org.springframework.test.context.ActiveProfiles;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * {@code @IdempotentHandler} functional beans on Spring Cloud Stream's Rabbit binder, against the
 * real RabbitMQ on 127.0.0.1:5672 and the local PostgreSQL. One context serves every test
 * (bindings in {@code application-rabbittest.properties}); every exchange and queue is named after
 * this run and deleted afterwards.
 */
@SpringBootTest(classes = RabbitStreamIdempotencyIntegrationTests.App.class)
@ActiveProfiles("rabbittest")
class RabbitStreamIdempotencyIntegrationTests extends StreamIdempotencyTestBase {

    static final String RUN = UUID.randomUUID().toString().substring(0, 8);

    RabbitStreamIdempotencyIntegrationTests() {
        super(RUN);
    }

    static final Map<String, String> QUEUES = Map.of(
            "dup",
            "dup",
            "flaky",
            "flaky",
            "poison",
            "poison",
            "nokey",
            "nokey",
            "busy",
            "busy",
            "enrich",
            "enrich",
            "concurrent",
            "concurrent",
            "enrich-out",
            "observer",
            "quote",
            "quote",
            "quote-out",
            "observer");

    static ConfigurableApplicationContext secondInstance;

    static AmqpAdmin admin;

    static ConfigurableApplicationContext context;

    static JdbcTemplate database;

    @DynamicPropertySource
    static void properties(DynamicPropertyRegistry registry) {
        registry.add("sumi.test.run", () -> RUN);
    }

    @AfterAll
    static void cleanUp() {
        if (secondInstance != null) {
            secondInstance.close();
        }
        if (context != null) {
            // Stop the consumers first, or they would declare their queues again.
            BindingsLifecycleController bindings = context.getBean(BindingsLifecycleController.class);
            for (String binding :
                    List.of("dup", "flaky", "poison", "noKey", "busy", "enrich", "quote", "concurrent", "observer")) {
                bindings.changeState(binding + "-in-0", BindingsLifecycleController.State.STOPPED);
            }
        }
        if (database != null) {
            deleteRows(database, RUN);
        }
        if (admin != null) {
            QUEUES.forEach((destination, group) -> {
                String exchange = exchange(destination);
                admin.deleteQueue(exchange + "." + group);
                admin.deleteQueue(exchange + "." + group + ".dlq");
                admin.deleteExchange(exchange);
            });
        }
    }

    @Autowired
    RabbitTemplate rabbit;

    @Autowired
    void remember(AmqpAdmin amqpAdmin, ConfigurableApplicationContext applicationContext, JdbcTemplate jdbcTemplate) {
        admin = amqpAdmin;
        context = applicationContext;
        database = jdbcTemplate;
    }

    static String exchange(String destination) {
        return "sumi-it-" + RUN + "-" + destination;
    }

    void send(String destination, @Nullable String key, String payload) {
        MessageProperties properties = new MessageProperties();
        properties.setContentType(MessageProperties.CONTENT_TYPE_TEXT_PLAIN);
        if (key != null) {
            properties.setHeader("outbox-id", key);
        }
        rabbit.send(
                exchange(destination),
                "#",
                new org.springframework.amqp.core.Message(payload.getBytes(StandardCharsets.UTF_8), properties));
    }

    org.springframework.amqp.core.@Nullable Message deadLetter(String destination, String group) {
        return rabbit.receive(exchange(destination) + "." + group + ".dlq");
    }

    @Test
    void duplicatesRunTheFunctionOnceInTransactionalMode() {
        for (int i = 0; i < 20; i++) {
            for (int copy = 0; copy < 3; copy++) {
                send("dup", RUN + "-dup-" + i, "payload-" + i);
            }
        }

        await().atMost(Duration.ofSeconds(30)).until(() -> count("dup", "processed") + count("dup", "duplicate") == 60);
        assertThat(effectRows("dup"))
                .hasSize(20)
                .allSatisfy(
                        row -> assertThat(((Number) row.get("n")).intValue()).isEqualTo(1));
        assertThat(count("dup", "duplicate")).isEqualTo(40);
        assertThat(store.find("dup", RUN + "-dup-3"))
                .get()
                .extracting(row -> row.status())
                .isEqualTo(MessageStatus.COMPLETED);
    }

    @Test
    void aPayloadOnlyFunctionThatThrowsThenSucceedsIsProcessedOnceAfterTheBinderRetries() {
        String key = RUN + "-flaky";
        send("flaky", key, "flaky payload");

        await().atMost(Duration.ofSeconds(30)).until(() -> effects.count("flaky:" + key) == 1);
        assertThat(effects.count("flaky-attempts:" + key)).isEqualTo(3);
        // The effect is counted inside the handler, just before the executor completes the row.
        await().atMost(Duration.ofSeconds(10))
                .untilAsserted(() -> assertThat(store.find("flaky", key)).get().satisfies(row -> {
                    assertThat(row.status()).isEqualTo(MessageStatus.COMPLETED);
                    assertThat(row.attempts()).isEqualTo(3);
                }));
    }

    @Test
    void aPoisonMessageGoesToTheDeadLetterQueueAfterTheConfiguredAttemptsAndTheLedgerNeverSaysDone() {
        String key = RUN + "-poison";
        send("poison", key, "poison payload");

        org.springframework.amqp.core.Message[] dead = new org.springframework.amqp.core.Message[1];
        await().atMost(Duration.ofSeconds(30)).until(() -> (dead[0] = deadLetter("poison", "poison")) != null);
        Map<String, Object> headers = dead[0].getMessageProperties().getHeaders();
        // The Rabbit binder puts its retry wrapper's text in x-exception-message; the cause is in the stack trace.
        assertThat(String.valueOf(headers.get("x-exception-stacktrace")))
                .contains("IllegalStateException: poisoned payload " + key);
        assertThat(headers.get("outbox-id")).isEqualTo(key);
        assertThat(new String(dead[0].getBody(), StandardCharsets.UTF_8)).isEqualTo("poison payload");
        assertThat(effects.count("poison-attempts:" + key)).isEqualTo(3);
        assertThat(store.find("poison", key)).get().satisfies(row -> {
            assertThat(row.status()).isEqualTo(MessageStatus.IN_PROGRESS);
            assertThat(row.lastError()).contains("poisoned payload");
        });
    }

    @Test
    void aMessageWithoutAKeyGoesToTheDeadLetterQueueAtOnceWithAClearError() {
        send("nokey", null, "no key here");

        org.springframework.amqp.core.Message[] dead = new org.springframework.amqp.core.Message[1];
        await().atMost(Duration.ofSeconds(30)).until(() -> (dead[0] = deadLetter("nokey", "nokey")) != null);
        Map<String, Object> headers = dead[0].getMessageProperties().getHeaders();
        assertThat(String.valueOf(headers.get("x-exception-stacktrace")))
                .contains(MissingIdempotencyKeyException.class.getName()
                        + ": No idempotency key for a message of consumer 'noKey'")
                .contains("outbox-id");
        assertThat(new String(dead[0].getBody(), StandardCharsets.UTF_8)).isEqualTo("no key here");
        assertThat(effects.count("nokey-calls")).isZero();
        // Not retried: the binder's retry classifies it as not retryable.
        assertThat(count("noKey", "rejected")).isEqualTo(1);
    }

    @Test
    void aBusyKeyIsRetriedUntilTheOtherConsumerLetsGoAndNeverDeadLettered() {
        String key = RUN + "-busy";
        // Another consumer holds a live lease on the key.
        ClaimResult holder = store.claim("busy", new ClaimRequest(key, null), Duration.ofSeconds(30));
        assertThat(holder.outcome()).isEqualTo(ClaimOutcome.CLAIMED);
        send("busy", key, "busy payload");

        await().atMost(Duration.ofSeconds(30)).until(() -> count("busy", "busy") >= 3);
        assertThat(effects.count("busy:" + key)).isZero();
        // The other consumer fails and releases its claim: the waiting delivery takes the key.
        store.release(holder.message(), "the other consumer failed");

        await().atMost(Duration.ofSeconds(30)).until(() -> effects.count("busy:" + key) == 1);
        // The effect is recorded inside the handler, before the claim is completed: wait for that too.
        await().atMost(Duration.ofSeconds(10))
                .untilAsserted(() -> assertThat(store.find("busy", key)).get().satisfies(row -> {
                    assertThat(row.status()).isEqualTo(MessageStatus.COMPLETED);
                    assertThat(row.attempts()).isEqualTo(2);
                }));
        assertThat(deadLetter("busy", "busy")).isNull();
    }

    @Test
    void aFunctionsOutputCarriesTheKeyAndADuplicateProducesNoOutput() {
        String key = RUN + "-enrich";
        send("enrich", key, "hello");
        send("enrich", key, "hello");
        send("enrich", key + "-last", "bye");

        await().atMost(Duration.ofSeconds(30)).until(() -> outputs("BYE").size() == 1);
        List<Message<?>> outputs = outputs("HELLO");
        assertThat(outputs).hasSize(1);
        assertThat(header(outputs.get(0), "idempotency-key")).isEqualTo(key);
        // Spring Cloud Function copies the input's headers to a bare return value: the outbox id travels too.
        assertThat(header(outputs.get(0), "outbox-id")).isEqualTo(key);
        assertThat(count("enrich", "duplicate")).isEqualTo(1);
    }

    /**
     * storeReply (docs/replies.md) on the Rabbit binder, lease mode: the function runs once and the
     * duplicate's output is the kept one, read back as the declared record type, with the
     * duplicate's own headers. Negative control: the test above, the same duplicate without
     * storeReply, produces no output.
     */
    @Test
    void aFunctionThatKeepsItsRepliesRunsOnceAndADuplicateGetsTheSameOutput() {
        String key = RUN + "-quote";
        send("quote", key, "tea");
        send("quote", key, "tea");

        await().atMost(Duration.ofSeconds(30))
                .until(() -> effects.received("enrich-out").stream()
                                .filter(m -> key.equals(header(m, "idempotency-key")))
                                .count()
                        == 2);
        List<Message<?>> outputs = effects.received("enrich-out").stream()
                .filter(m -> key.equals(header(m, "idempotency-key")))
                .toList();
        assertThat(effects.count("quote:" + key)).isEqualTo(1);
        assertThat(count("quote", "duplicate")).isEqualTo(1);
        // Equal outputs: a second run would have priced the quote differently.
        assertThat(payload(outputs.get(1))).isEqualTo(payload(outputs.get(0))).contains("\"item\":\"tea\"");
        assertThat(outputs).extracting(m -> header(m, "outbox-id")).containsExactly(key, key);
    }

    List<Message<?>> outputs(String payload) {
        return effects.received("enrich-out").stream()
                .filter(m -> payload(m).equals(payload))
                .toList();
    }

    @Test
    void twoInstancesInOneGroupReceivingTheSameKeysConcurrentlyWriteEachEffectOnce() {
        // Command-line arguments: they override the profile's function definition.
        String[] database = TestDatabase.POSTGRESQL.settings();
        secondInstance = new SpringApplicationBuilder(App.class)
                .profiles("rabbittest")
                .run(
                        "--spring.cloud.function.definition=concurrent",
                        "--sumi.test.run=" + RUN,
                        "--spring.datasource.url=" + database[0],
                        "--spring.datasource.username=" + database[1],
                        "--spring.datasource.password=" + database[2]);
        for (int i = 0; i < 100; i++) {
            // Each key twice in a row: the queue's four consumers (two per instance) take them at once.
            send("concurrent", RUN + "-c" + i, "v" + i);
            send("concurrent", RUN + "-c" + i, "v" + i);
        }

        await().atMost(Duration.ofSeconds(60))
                .until(() -> deliveries(meters, "concurrent")
                                        + deliveries(secondInstance.getBean(MeterRegistry.class), "concurrent")
                                >= 200
                        && effectRows("concurrent").size() == 100);
        assertThat(effectRows("concurrent"))
                .hasSize(100)
                .allSatisfy(
                        row -> assertThat(((Number) row.get("n")).intValue()).isEqualTo(1));
        assertThat(jdbc.queryForObject(
                        "SELECT COUNT(*) FROM processed_messages WHERE consumer = 'concurrent-rabbit'"
                                + " AND message_id LIKE ? AND status = 'COMPLETED'",
                        Integer.class,
                        RUN + "-c%"))
                .isEqualTo(100);
        assertThat(deliveries(meters, "concurrent")).isPositive();
        assertThat(deliveries(secondInstance.getBean(MeterRegistry.class), "concurrent"))
                .isPositive();
    }

    /** Processed and duplicate deliveries (busy ones are retried and end as one of those). */
    static double deliveries(MeterRegistry registry, String consumer) {
        return registry.find("sumi.messages").tag("consumer", consumer + "-rabbit").counters().stream()
                .filter(c ->
                        List.of("processed", "duplicate").contains(c.getId().getTag("outcome")))
                .mapToDouble(Counter::count)
                .sum();
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import({SumiStreamTestConfiguration.class, StreamTestFunctions.class})
    static class App {

        @Bean
        @IdempotentHandler(mode = IdempotencyMode.TRANSACTIONAL)
        Consumer<String> dup(JdbcTemplate jdbc) {
            return payload -> jdbc.update(
                    "INSERT INTO sumi_stream_effects (consumer, message_id) VALUES ('dup', ?)",
                    IdempotencyContext.current().key());
        }

        @Bean
        @IdempotentHandler
        Consumer<Message<String>> poison(Effects effects) {
            return message -> {
                String key = IdempotencyContext.current().key();
                effects.effect("poison-attempts:" + key);
                throw new IllegalStateException("poisoned payload " + key);
            };
        }

        @Bean
        @IdempotentHandler(mode = IdempotencyMode.LEASE)
        Consumer<String> busy(Effects effects) {
            return payload ->
                    effects.effect("busy:" + IdempotencyContext.current().key());
        }

        @Bean
        @IdempotentHandler
        Function<String, String> enrich() {
            return String::toUpperCase;
        }

        record Quote(String item, int price) {}

        @Bean
        @IdempotentHandler(mode = IdempotencyMode.LEASE, storeReply = true)
        Function<String, Quote> quote(Effects effects) {
            AtomicInteger runs = new AtomicInteger();
            return item -> {
                effects.effect("quote:" + IdempotencyContext.current().key());
                return new Quote(item, 100 + runs.incrementAndGet());
            };
        }

        @Bean
        @IdempotentHandler(consumer = "concurrent-rabbit", mode = IdempotencyMode.LEASE)
        Consumer<String> concurrent(JdbcTemplate jdbc) {
            return payload -> jdbc.update(
                    "INSERT INTO sumi_stream_effects (consumer, message_id) VALUES ('concurrent', ?)",
                    IdempotencyContext.current().key());
        }

        /** Not idempotent: sees the function's output. */
        @Bean
        Consumer<Message<byte[]>> observer(Effects effects) {
            return message -> effects.receive("enrich-out", message);
        }
    }
}
