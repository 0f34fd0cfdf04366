package io.sumi.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import io.sumi.consumer.IdempotentHandler;
import io.sumi.testing.TestDatabase;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.core.DefaultKafkaProducerFactory;
import org.springframework.kafka.core.KafkaOperations;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.listener.DeadLetterPublishingRecoverer;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.util.backoff.FixedBackOff;

/**
 * The bad-input table with the error handler most applications define: a {@code DefaultErrorHandler}
 * bean whose {@code DeadLetterPublishingRecoverer} sends failed records to {@code <topic>-dlt}
 * (3 attempts for ordinary failures). Also the configuration rows: a ledger table name that is
 * not an identifier, and one that names no table, must stop the application at start-up.
 * See {@link BadInputTableSupport} for what every row checks.
 */
@SpringBootTest(
        classes = BadInputWithDeadLetterTopicIntegrationTests.App.class,
        properties = {
            "spring.kafka.consumer.auto-offset-reset=earliest",
            "spring.kafka.listener.concurrency=1",
            "spring.flyway.locations=classpath:db/sumi/{vendor}",
            "sumi.kafka.busy-retry-interval=100ms",
            "sumi.test.topic-suffix=." + BadInputWithDeadLetterTopicIntegrationTests.VARIANT
        })
@ExtendWith(OutputCaptureExtension.class)
class BadInputWithDeadLetterTopicIntegrationTests extends BadInputTableSupport {

    static final String VARIANT = "dlt";

    @Value("${spring.kafka.bootstrap-servers}")
    String bootstrapServers;

    @Override
    String variant() {
        return VARIANT;
    }

    static Stream<Row> rows() {
        return rows(VARIANT, Goes.DEAD_LETTER_TOPIC);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("rows")
    void badInput(Row row, CapturedOutput output) throws Exception {
        check(row, output);
    }

    /**
     * A bad {@code sumi.ledger.table-name}.
     *
     * @param says fragments the start-up failure must contain
     */
    record StartupRow(String input, String tableName, Class<? extends Throwable> error, List<String> says) {
        @Override
        public String toString() {
            return input + " -> refused at start-up (" + error.getSimpleName() + ")";
        }
    }

    static Stream<StartupRow> startupRows() {
        return Stream.of(
                new StartupRow(
                        "ledger table name that is not an SQL identifier",
                        "processed-messages;drop",
                        IllegalArgumentException.class,
                        List.of("Invalid ledger table name", "processed-messages;drop", "SQL identifier")),
                new StartupRow(
                        "ledger table name naming no table",
                        "no_such_ledger",
                        IllegalStateException.class,
                        List.of("no_such_ledger", "does not exist", "sumi.ledger.table-name", "db/sumi")));
    }

    /**
     * A second application with the bad table name starts against the same broker and database;
     * it must refuse to start, and must not have consumed the record waiting for it.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("startupRows")
    void badLedgerTableName(StartupRow row) throws Exception {
        String topic = "bad.startup";
        template.send(topic, "k", "waits for a well-configured instance").get(10, TimeUnit.SECONDS);
        String[] database = TestDatabase.POSTGRESQL.settings();
        Throwable failure = null;
        try (ConfigurableApplicationContext context = new SpringApplicationBuilder(StartupApp.class)
                .web(WebApplicationType.NONE)
                .properties(
                        "spring.datasource.url=" + database[0],
                        "spring.datasource.username=" + database[1],
                        "spring.datasource.password=" + database[2],
                        "spring.flyway.locations=classpath:db/sumi/{vendor}",
                        "spring.kafka.bootstrap-servers=" + bootstrapServers,
                        "spring.kafka.consumer.auto-offset-reset=earliest",
                        "spring.main.register-shutdown-hook=false",
                        "sumi.ledger.table-name=" + row.tableName())
                .run()) {
            fail("The application started with sumi.ledger.table-name=" + row.tableName());
        } catch (RuntimeException ex) {
            failure = ex;
        }
        Throwable cause = failure;
        while (cause != null
                && !(row.error().isInstance(cause)
                        && cause.getMessage() != null
                        && cause.getMessage().contains(row.says().get(0)))) {
            cause = cause.getCause();
        }
        assertThat(cause)
                .as("a %s in the start-up failure %s", row.error().getSimpleName(), failure)
                .isNotNull();
        assertSays(cause.getMessage(), row.says());
        assertThat(committedOffset("bad-startup", topic))
                .as("the refused instance consumed nothing")
                .isEqualTo(-1);
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(Common.class)
    static class App {

        /** Records go to {@code <topic>-dlt}; an unreadable value is published as the bytes it arrived as. */
        @Bean
        DefaultErrorHandler errorHandler(
                KafkaTemplate<Object, Object> template,
                @Value("${spring.kafka.bootstrap-servers}") String bootstrapServers) {
            Map<String, Object> properties = new HashMap<>();
            properties.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
            KafkaTemplate<String, byte[]> bytes = new KafkaTemplate<>(
                    new DefaultKafkaProducerFactory<>(properties, new StringSerializer(), new ByteArraySerializer()));
            Map<Class<?>, KafkaOperations<?, ?>> templates = new LinkedHashMap<>();
            templates.put(byte[].class, bytes);
            templates.put(Object.class, template);
            return new DefaultErrorHandler(new DeadLetterPublishingRecoverer(templates), new FixedBackOff(0, 2));
        }
    }

    /** An application with one idempotent listener, started with a bad table name. */
    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(StartupListener.class)
    static class StartupApp {}

    static class StartupListener {
        final List<String> seen = new ArrayList<>();

        @KafkaListener(id = "bad-startup", topics = "bad.startup")
        @IdempotentHandler
        public void on(@Nullable String payload) {
            seen.add(payload);
        }
    }
}
