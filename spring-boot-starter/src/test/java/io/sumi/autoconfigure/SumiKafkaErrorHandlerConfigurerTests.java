package io.sumi.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import io.sumi.consumer.IdempotentHandler;
import io.sumi.kafka.SumiKafkaErrorHandling;
import io.sumi.testing.TestDatabase;
import java.time.Duration;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.kafka.autoconfigure.KafkaAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.listener.AbstractMessageListenerContainer;
import org.springframework.kafka.listener.CommonErrorHandler;
import org.springframework.kafka.listener.CommonLoggingErrorHandler;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.util.backoff.FixedBackOff;

/**
 * Issue 8, defect 1: an error handler Sumi cannot teach its exceptions must not silently skip busy
 * keys: start-up fails for a container that runs an {@code @IdempotentHandler}, and other
 * containers keep their handler. (No broker: the containers never start.)
 */
class SumiKafkaErrorHandlerConfigurerTests {

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(
                    KafkaAutoConfiguration.class, SumiAutoConfiguration.class, SumiKafkaAutoConfiguration.class))
            .withPropertyValues("spring.kafka.bootstrap-servers=127.0.0.1:1");

    @Test
    void anErrorHandlerSumiCannotTeachFailsStartUpForAnIdempotentListener() {
        runner.withUserConfiguration(LoggingHandler.class, IdempotentListener.class)
                .run(context -> {
                    assertThat(context).hasFailed();
                    assertThat(context.getStartupFailure())
                            .rootCause()
                            .hasMessageContaining("'idempotent'")
                            .hasMessageContaining(CommonLoggingErrorHandler.class.getName())
                            .hasMessageContaining("Use a DefaultErrorHandler")
                            .hasMessageContaining("sumi.kafka.configure-error-handlers=false");
                });
    }

    @Test
    void aContainerWithoutIdempotentHandlerKeepsAnErrorHandlerSumiCannotTeach() {
        runner.withUserConfiguration(LoggingHandler.class, PlainListener.class).run(context -> {
            assertThat(context).hasNotFailed();
            CommonErrorHandler handler = ((AbstractMessageListenerContainer<?, ?>)
                            context.getBean(KafkaListenerEndpointRegistry.class).getListenerContainer("plain"))
                    .getCommonErrorHandler();
            assertThat(handler).isInstanceOf(CommonLoggingErrorHandler.class);
        });
    }

    @Test
    void aContainerWithoutErrorHandlerGetsATaughtDefaultErrorHandlerBeforeItStarts() {
        runner.withUserConfiguration(IdempotentListener.class).run(context -> {
            assertThat(context).hasNotFailed();
            CommonErrorHandler handler = ((AbstractMessageListenerContainer<?, ?>)
                            context.getBean(KafkaListenerEndpointRegistry.class).getListenerContainer("idempotent"))
                    .getCommonErrorHandler();
            assertThat(handler).isInstanceOf(DefaultErrorHandler.class);
        });
    }

    /** Issue 19, A4: a handler without retries is taught to retry Sumi's exceptions in place, not refused. */
    @Test
    void anErrorHandlerWithoutRetriesIsTaughtForAnIdempotentListener() {
        runner.withUserConfiguration(NoRetriesHandler.class, IdempotentListener.class)
                .run(context -> assertThat(context).hasNotFailed());
    }

    @Test
    void theHandlerWithoutRetriesThatSumiBuildsStartsForAnIdempotentListener() {
        runner.withUserConfiguration(IdempotentListener.class)
                .withBean(
                        CommonErrorHandler.class,
                        () -> SumiKafkaErrorHandling.withoutRetries((record, ex) -> {}, Duration.ofSeconds(1)))
                .run(context -> assertThat(context).hasNotFailed());
    }

    @Configuration(proxyBeanMethods = false)
    static class NoRetriesHandler {
        @Bean
        CommonErrorHandler noRetriesErrorHandler() {
            return new DefaultErrorHandler(new FixedBackOff(0, 0));
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class LoggingHandler {
        @Bean
        CommonErrorHandler loggingErrorHandler() {
            return new CommonLoggingErrorHandler();
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class IdempotentListener {

        @Bean(destroyMethod = "") // the shared test pool outlives this context
        DataSource dataSource() {
            return TestDatabase.H2.dataSource();
        }

        @Bean
        Listener listener() {
            return new Listener();
        }

        static class Listener {
            @KafkaListener(id = "idempotent", topics = "t", autoStartup = "false")
            @IdempotentHandler
            public void onMessage(String payload) {}
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class PlainListener {

        @Bean(destroyMethod = "")
        DataSource dataSource() {
            return TestDatabase.H2.dataSource();
        }

        @Bean
        Listener listener() {
            return new Listener();
        }

        static class Listener {
            @KafkaListener(id = "plain", topics = "t", autoStartup = "false")
            public void onMessage(String payload) {}
        }
    }
}
