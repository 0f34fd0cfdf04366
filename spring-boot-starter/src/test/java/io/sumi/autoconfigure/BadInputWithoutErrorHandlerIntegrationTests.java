package io.sumi.autoconfigure;

import java.util.stream.Stream;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.annotation.Import;

/**
 * The bad-input table in an application that defines no error-handler bean, so every container
 * runs with Spring Kafka's default ({@code DefaultErrorHandler}: 10 attempts, then a recoverer that
 * logs the record at ERROR and commits past it). Sumi's refusals must still be refused at once
 * (not retried ten times), the log must say what is wrong, and the neighbours must be processed
 * exactly once. See {@link BadInputTableSupport} for what every row checks.
 */
@SpringBootTest(
        classes = BadInputWithoutErrorHandlerIntegrationTests.App.class,
        properties = {
            "spring.kafka.consumer.auto-offset-reset=earliest",
            "spring.kafka.listener.concurrency=1",
            "spring.flyway.locations=classpath:db/sumi/{vendor}",
            "sumi.kafka.busy-retry-interval=100ms",
            "sumi.test.topic-suffix=." + BadInputWithoutErrorHandlerIntegrationTests.VARIANT
        })
@ExtendWith(OutputCaptureExtension.class)
class BadInputWithoutErrorHandlerIntegrationTests extends BadInputTableSupport {

    static final String VARIANT = "noeh";

    @Override
    String variant() {
        return VARIANT;
    }

    static Stream<Row> rows() {
        return rows(VARIANT, Goes.LOGGED_AND_SKIPPED);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("rows")
    void badInput(Row row, CapturedOutput output) throws Exception {
        check(row, output);
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(Common.class)
    static class App {}
}
