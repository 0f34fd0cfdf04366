package io.sumi.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import io.sumi.consumer.IdempotentHandler;
import io.sumi.rabbit.RejectAndDontRequeueBatchRecoverer;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.rabbit.annotation.RabbitListener;
import org.springframework.amqp.rabbit.config.SimpleRabbitListenerContainerFactory;
import org.springframework.amqp.rabbit.connection.ConnectionFactory;
import org.springframework.amqp.rabbit.retry.MessageBatchRecoverer;
import org.springframework.amqp.rabbit.retry.MessageRecoverer;
import org.springframework.amqp.rabbit.retry.RejectAndDontRequeueRecoverer;
import org.springframework.boot.amqp.autoconfigure.RabbitAutoConfiguration;
import org.springframework.boot.amqp.autoconfigure.SimpleRabbitListenerContainerFactoryConfigurer;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.NestedExceptionUtils;

/**
 * Issue 19: Boot's listener retry on a consumer-batch factory. Boot's default recoverer cannot
 * recover a batch (Spring AMQP then acknowledges a batch whose retries are spent: its messages never
 * reach the dead-letter exchange), so the starter declares a batch-aware {@code MessageRecoverer}
 * when the application has none, keeps the application's own, and refuses at start-up a
 * consumer-batch container whose recoverer cannot recover a batch. No broker is needed: the
 * containers do not start, the refusal comes when they are created. The loss itself, on the real
 * broker: {@link RabbitBootRetryIntegrationTests}.
 */
class SumiRabbitBatchRecoveryStartUpTests {

    private static ApplicationContextRunner runner() {
        return H2Context.withTransactionManager("sumi_rabbit_recovery")
                .withPropertyValues(
                        "spring.rabbitmq.listener.simple.retry.enabled=true",
                        "spring.rabbitmq.listener.simple.auto-startup=false",
                        "sumi.outbox.dispatcher.enabled=false")
                .withConfiguration(AutoConfigurations.of(
                        RabbitAutoConfiguration.class, SumiAutoConfiguration.class, SumiRabbitAutoConfiguration.class))
                .withUserConfiguration(App.class);
    }

    @Test
    void withoutARecovererBeanBootsRetryGetsSumisBatchAwareRecovererAndStarts() {
        runner().run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context.getBean(MessageRecoverer.class)).isInstanceOf(RejectAndDontRequeueBatchRecoverer.class);
        });
    }

    @Test
    void aRecovererBeanThatCannotRecoverABatchIsRefusedAtStartUpNamingTheContainerAndTheFix() {
        runner().withBean(MessageRecoverer.class, RejectAndDontRequeueRecoverer::new)
                .run(context -> {
                    assertThat(context).hasFailed();
                    assertThat(NestedExceptionUtils.getMostSpecificCause(context.getStartupFailure()))
                            .isInstanceOf(IllegalStateException.class)
                            .hasMessageContaining("Rabbit listener container 'recovery-batch'")
                            .hasMessageContaining("container factory 'batchFactory'")
                            .hasMessageContaining(
                                    RejectAndDontRequeueRecoverer.class.getName() + " is not a MessageBatchRecoverer")
                            .hasMessageContaining("io.sumi.rabbit.RejectAndDontRequeueBatchRecoverer");
                });
    }

    @Test
    void theApplicationsOwnBatchRecovererIsKept() {
        MessageBatchRecoverer own = (messages, cause) -> {};
        runner().withBean(MessageRecoverer.class, () -> own).run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context.getBean(MessageRecoverer.class)).isSameAs(own);
        });
    }

    static class Listener {

        @RabbitListener(id = "recovery-batch", queues = "sumi-recovery-batch", containerFactory = "batchFactory")
        @IdempotentHandler(consumer = "recovery-batch")
        public void batch(List<Message> messages) {}
    }

    @Configuration(proxyBeanMethods = false)
    static class App {

        @Bean
        Listener listener() {
            return new Listener();
        }

        /** A consumer-batch factory with Boot's settings, its retry (and recoverer) included. */
        @Bean
        SimpleRabbitListenerContainerFactory batchFactory(
                SimpleRabbitListenerContainerFactoryConfigurer configurer, ConnectionFactory connections) {
            SimpleRabbitListenerContainerFactory factory = new SimpleRabbitListenerContainerFactory();
            configurer.configure(factory, connections);
            factory.setBatchListener(true);
            factory.setConsumerBatchEnabled(true);
            factory.setBatchSize(3);
            return factory;
        }
    }
}
