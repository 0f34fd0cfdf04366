package io.sumi.rabbit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.aopalliance.aop.Advice;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.amqp.core.BatchMessageListener;
import org.springframework.amqp.rabbit.config.RetryInterceptorBuilder;
import org.springframework.amqp.rabbit.config.SimpleRabbitListenerContainerFactory;
import org.springframework.amqp.rabbit.config.SimpleRabbitListenerEndpoint;
import org.springframework.amqp.rabbit.config.StatelessRetryOperationsInterceptorFactoryBean;
import org.springframework.amqp.rabbit.connection.CachingConnectionFactory;
import org.springframework.amqp.rabbit.core.RabbitTemplate;
import org.springframework.amqp.rabbit.listener.SimpleMessageListenerContainer;
import org.springframework.amqp.rabbit.retry.MessageBatchRecoverer;
import org.springframework.amqp.rabbit.retry.MessageRecoverer;
import org.springframework.amqp.rabbit.retry.RejectAndDontRequeueRecoverer;
import org.springframework.amqp.rabbit.retry.RepublishMessageRecoverer;

/**
 * Issue 19: a consumer-batch container whose stateless retry interceptor cannot recover a batch
 * (Spring AMQP acknowledges a batch whose retries are spent, so it never reaches the dead-letter
 * exchange) is refused as Sumi's customizer sets it up; a batch-aware recoverer, no recoverer at all
 * (the last failure goes to the container) and record containers pass. No broker is needed: the
 * containers are created, never started.
 */
class BatchRecoveryCheckTests {

    private final CachingConnectionFactory connections = new CachingConnectionFactory("127.0.0.1");

    @AfterEach
    void close() {
        connections.destroy();
    }

    @Test
    void bootsDefaultRecovererOnAConsumerBatchFactoryIsRefusedNamingTheContainerTheFactoryAndTheFix() {
        assertThatThrownBy(() -> container(true, retry(new RejectAndDontRequeueRecoverer())))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("Rabbit listener container 'orders'")
                .hasMessageContaining("[orders]")
                .hasMessageContaining("container factory 'batchFactory'")
                .hasMessageContaining("RejectAndDontRequeueRecoverer is not a MessageBatchRecoverer")
                .hasMessageContaining("RejectAndDontRequeueBatchRecoverer");
    }

    @Test
    void aRepublishingRecovererThatCannotTakeABatchIsRefused() {
        assertThatThrownBy(() -> container(true, retry(new RepublishMessageRecoverer(new RabbitTemplate(connections)))))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("RepublishMessageRecoverer is not a MessageBatchRecoverer");
    }

    @Test
    void aRetryWhoseFactoryBeanHasNoRecovererDropsTheBatchAndIsRefused() {
        assertThatThrownBy(() -> container(
                        true, RetryInterceptorBuilder.stateless().maxRetries(2).build()))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("has no MessageRecoverer");
    }

    @Test
    void batchAwareRecoverersPass() {
        assertThatCode(() -> container(true, retry(new RejectAndDontRequeueBatchRecoverer())))
                .doesNotThrowAnyException();
        MessageBatchRecoverer own = (messages, cause) -> {};
        assertThatCode(() -> container(true, retry(own))).doesNotThrowAnyException();
    }

    @Test
    void aFactoryBeanThatOverridesRecoverDecidesOnItsOwn() {
        StatelessRetryOperationsInterceptorFactoryBean custom = new StatelessRetryOperationsInterceptorFactoryBean() {
            @Override
            protected @Nullable Object recover(@Nullable Object[] args, Throwable cause) {
                throw new IllegalStateException("the application's own recovery", cause);
            }
        };
        custom.setMessageRecoverer(new RejectAndDontRequeueRecoverer());
        assertThatCode(() -> container(true, custom.getObject())).doesNotThrowAnyException();
    }

    @Test
    void recordContainersAndBatchesWithoutRetryPass() {
        assertThatCode(() -> container(false, retry(new RejectAndDontRequeueRecoverer())))
                .doesNotThrowAnyException();
        assertThatCode(() -> container(true)).doesNotThrowAnyException();
    }

    private static Advice retry(MessageRecoverer recoverer) {
        return RetryInterceptorBuilder.stateless()
                .maxRetries(2)
                .recoverer(recoverer)
                .build();
    }

    private SimpleMessageListenerContainer container(boolean consumerBatch, Advice... chain) {
        SimpleRabbitListenerContainerFactory factory = new SimpleRabbitListenerContainerFactory();
        factory.setConnectionFactory(connections);
        factory.setAdviceChain(chain);
        if (consumerBatch) {
            factory.setBatchListener(true);
            factory.setConsumerBatchEnabled(true);
            factory.setBatchSize(3);
        }
        new SumiRabbitListenerContainerFactoryPostProcessor(() -> Duration.ofMillis(100), () -> null)
                .postProcessAfterInitialization(factory, "batchFactory");
        SimpleRabbitListenerEndpoint endpoint = new SimpleRabbitListenerEndpoint();
        endpoint.setId("orders");
        endpoint.setQueueNames("orders");
        endpoint.setMessageListener((BatchMessageListener) messages -> {});
        SimpleMessageListenerContainer container = factory.createListenerContainer(endpoint);
        assertThat(container.isConsumerBatchEnabled()).isEqualTo(consumerBatch);
        return container;
    }
}
