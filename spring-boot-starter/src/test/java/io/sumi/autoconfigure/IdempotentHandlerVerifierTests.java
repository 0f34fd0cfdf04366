package io.sumi.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import io.sumi.consumer.IdempotentHandler;
import io.sumi.testing.TestDatabase;
import java.lang.reflect.Method;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * An {@code @IdempotentHandler} that no binder handles must fail start-up, never be ignored.
 */
class IdempotentHandlerVerifierTests {

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(SumiAutoConfiguration.class, SumiKafkaAutoConfiguration.class))
            .withUserConfiguration(Handlers.class);

    @Test
    void aListenerMethodWithoutTheKafkaBinderFailsStartUpWithAClearMessage() {
        runner.withClassLoader(new FilteredClassLoader("io.sumi.kafka")).run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure())
                    .hasMessageContaining("would be ignored")
                    .hasMessageContaining("Listener.onMessage")
                    .hasMessageContaining("sumi-binder-spring-kafka");
        });
    }

    @Test
    void aListenerMethodWithTheKafkaBinderStarts() {
        runner.run(context -> assertThat(context).hasNotFailed());
    }

    @Test
    void anInvalidLeaseFailsStartUp() {
        new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(SumiAutoConfiguration.class, SumiKafkaAutoConfiguration.class))
                .withUserConfiguration(BadHandlers.class)
                .run(context -> {
                    assertThat(context).hasFailed();
                    assertThat(context.getStartupFailure())
                            .hasMessageContaining("Invalid lease")
                            .hasMessageContaining("five minutes");
                });
    }

    @Test
    void aJmsListenerMethodWithoutTheJmsBinderFailsStartUpNamingIt() {
        new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(
                        SumiAutoConfiguration.class, SumiKafkaAutoConfiguration.class, SumiJmsAutoConfiguration.class))
                .withUserConfiguration(JmsHandlers.class)
                .withClassLoader(new FilteredClassLoader("io.sumi.jms"))
                .run(context -> {
                    assertThat(context).hasFailed();
                    assertThat(context.getStartupFailure())
                            .hasMessageContaining("would be ignored")
                            .hasMessageContaining("JmsListener.onMessage")
                            .hasMessageContaining("sumi-binder-spring-jms");
                });
    }

    @Test
    void aJmsListenerMethodBesideTheKafkaBinderIsTheJmsBindersWhichValidatesIt() {
        new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(
                        SumiAutoConfiguration.class, SumiKafkaAutoConfiguration.class, SumiJmsAutoConfiguration.class))
                .withUserConfiguration(JmsHandlers.class)
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    Method method = JmsHandlers.JmsListener.class.getMethod("onMessage", String.class);
                    assertThat(context.getBean(io.sumi.kafka.IdempotentHandlerAdvisor.class)
                                    .guards(method, JmsHandlers.JmsListener.class))
                            .isFalse();
                    assertThat(context.getBean(io.sumi.jms.IdempotentJmsHandlerAdvisor.class)
                                    .guards(method, JmsHandlers.JmsListener.class))
                            .isTrue();
                });
        new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(
                        SumiAutoConfiguration.class, SumiKafkaAutoConfiguration.class, SumiJmsAutoConfiguration.class))
                .withUserConfiguration(BadJmsHandlers.class)
                .run(context -> {
                    assertThat(context).hasFailed();
                    assertThat(context.getStartupFailure()).hasMessageContaining("Invalid lease");
                });
    }

    @Test
    void aJmsListenerThatAsksToKeepItsRepliesFailsStartUp() {
        new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(SumiAutoConfiguration.class, SumiJmsAutoConfiguration.class))
                .withUserConfiguration(ReplyingJmsHandlers.class)
                .run(context -> {
                    assertThat(context).hasFailed();
                    assertThat(context.getStartupFailure())
                            .hasMessageContaining("storeReply")
                            .hasMessageContaining("JMS binder does not keep replies");
                });
    }

    @Configuration(proxyBeanMethods = false)
    static class ReplyingJmsHandlers {

        @Bean(destroyMethod = "") // the shared test pool outlives this context
        DataSource dataSource() {
            return TestDatabase.H2.dataSource();
        }

        @Bean
        ReplyingJmsListener replyingJmsListener() {
            return new ReplyingJmsListener();
        }

        static class ReplyingJmsListener {
            @org.springframework.jms.annotation.JmsListener(destination = "verifier.queue")
            @IdempotentHandler(storeReply = true)
            public String onMessage(String payload) {
                return payload;
            }
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class JmsHandlers {

        @Bean(destroyMethod = "") // the shared test pool outlives this context
        DataSource dataSource() {
            return TestDatabase.H2.dataSource();
        }

        @Bean
        JmsListener jmsListener() {
            return new JmsListener();
        }

        static class JmsListener {
            @org.springframework.jms.annotation.JmsListener(destination = "verifier.queue")
            @IdempotentHandler
            public void onMessage(String payload) {}
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class BadJmsHandlers {

        @Bean(destroyMethod = "") // the shared test pool outlives this context
        DataSource dataSource() {
            return TestDatabase.H2.dataSource();
        }

        @Bean
        BadJmsListener badJmsListener() {
            return new BadJmsListener();
        }

        static class BadJmsListener {
            @org.springframework.jms.annotation.JmsListener(destination = "verifier.queue")
            @IdempotentHandler(lease = "five minutes")
            public void onMessage(String payload) {}
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class Handlers {

        @Bean(destroyMethod = "") // the shared test pool outlives this context
        DataSource dataSource() {
            return TestDatabase.H2.dataSource();
        }

        @Bean
        Handlers.Listener listener() {
            return new Listener();
        }

        static class Listener {
            @org.springframework.kafka.annotation.KafkaListener(
                    id = "verifier",
                    topics = "verifier.topic",
                    autoStartup = "false")
            @IdempotentHandler
            public void onMessage(String payload) {}
        }
    }

    /** Defect 4 of issue 8: such a method used the record the container delivered to its caller. */
    @Test
    void anAnnotatedMethodThatIsNotAListenerAndHasNoMessageParameterFailsStartUp() {
        new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(SumiAutoConfiguration.class, SumiKafkaAutoConfiguration.class))
                .withUserConfiguration(PayloadOnlyService.class)
                .run(context -> {
                    assertThat(context).hasFailed();
                    assertThat(context.getStartupFailure())
                            .rootCause()
                            .hasMessageContaining("Service.charge")
                            .hasMessageContaining("is not a @KafkaListener method")
                            .hasMessageContaining("ConsumerRecord");
                });
    }

    @Configuration(proxyBeanMethods = false)
    static class PayloadOnlyService {

        @Bean(destroyMethod = "") // the shared test pool outlives this context
        DataSource dataSource() {
            return TestDatabase.H2.dataSource();
        }

        @Bean
        Service service() {
            return new Service();
        }

        static class Service {
            @IdempotentHandler
            public void charge(String payload) {}
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class BadHandlers {

        @Bean(destroyMethod = "") // the shared test pool outlives this context
        DataSource dataSource() {
            return TestDatabase.H2.dataSource();
        }

        @Bean
        BadListener badListener() {
            return new BadListener();
        }

        static class BadListener {
            @IdempotentHandler(lease = "five minutes")
            public void onMessage(String payload) {}
        }
    }
}
