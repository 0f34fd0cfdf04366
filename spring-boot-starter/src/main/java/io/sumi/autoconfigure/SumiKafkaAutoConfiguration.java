package io.sumi.autoconfigure;

import io.sumi.consumer.HandlerDefaults;
import io.sumi.consumer.IdempotentExecutor;
import io.sumi.kafka.IdempotentHandlerAdvisor;
import io.sumi.kafka.IdempotentHandlerInterceptor;
import io.sumi.kafka.PollClaimContainerCheck;
import io.sumi.kafka.ShareFactoryPhase;
import io.sumi.kafka.ShareGroupListenerCheck;
import io.sumi.kafka.SumiErrorHandlerConfigurer;
import io.sumi.kafka.SumiKafkaErrorHandling;
import io.sumi.kafka.SumiListenerContainerFactoryPostProcessor;
import org.springframework.beans.factory.BeanCreationException;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.context.annotation.Role;
import org.springframework.core.env.Environment;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.listener.FailedRecordProcessor;

/**
 * {@code @IdempotentHandler} on {@code @KafkaListener} methods: the advisor, the record-capturing
 * interceptor on every listener container factory, and Sumi's exception classification on every
 * listener container's error handler (docs/kafka-error-handling.md).
 */
@AutoConfiguration(
        after = SumiAutoConfiguration.class,
        afterName = "org.springframework.boot.kafka.autoconfigure.KafkaAutoConfiguration")
@ConditionalOnClass({KafkaListener.class, IdempotentHandlerAdvisor.class})
@Import(BinderSupport.AutoProxyRegistrar.class)
public class SumiKafkaAutoConfiguration {

    static final String POLL_CLAIM_PROPERTY = "sumi.kafka.poll-claim";

    @Bean
    @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
    @ConditionalOnMissingBean
    static IdempotentHandlerAdvisor sumiIdempotentHandlerAdvisor(
            ObjectProvider<IdempotentExecutor> executor, ObjectProvider<SumiProperties> properties) {
        // Static and lazy: advisors are created early by the auto-proxy creator; the executor (and
        // with it the DataSource) is looked up on the first message instead.
        return new IdempotentHandlerAdvisor(
                new IdempotentHandlerInterceptor(executor::getObject, () -> defaults(properties.getObject())));
    }

    static HandlerDefaults defaults(SumiProperties properties) {
        return BinderSupport.defaults(properties);
    }

    @Bean
    static SumiListenerContainerFactoryPostProcessor sumiListenerContainerFactoryPostProcessor(
            Environment environment) {
        // Read from the Environment: a static post-processor is created before the properties bean.
        return new SumiListenerContainerFactoryPostProcessor(
                environment.getProperty(POLL_CLAIM_PROPERTY, Boolean.class, false));
    }

    /** Refuses, at start-up, containers whose offsets Sumi cannot write the poll's completions before. */
    @Bean
    @ConditionalOnBean(KafkaListenerEndpointRegistry.class)
    @ConditionalOnProperty(name = POLL_CLAIM_PROPERTY, havingValue = "true")
    PollClaimContainerCheck sumiPollClaimContainerCheck(ObjectProvider<KafkaListenerEndpointRegistry> registry) {
        return new PollClaimContainerCheck(registry::getObject);
    }

    /**
     * Refuses, at start-up, share-group containers (KIP-932) that run an {@code @IdempotentHandler}
     * listener, unless {@code sumi-binder-spring-kafka-share} (Spring Boot 4.1) guards them (its
     * bean {@code sumiShareListenerConfigurer}): without it nothing settles share acknowledgements,
     * and there a retry is counted towards the record's delivery limit (docs/kafka.md, "Share groups").
     */
    @Bean
    @ConditionalOnBean(KafkaListenerEndpointRegistry.class)
    @ConditionalOnMissingBean(name = "sumiShareListenerConfigurer")
    ShareGroupListenerCheck sumiShareGroupListenerCheck(ObjectProvider<KafkaListenerEndpointRegistry> registry) {
        return new ShareGroupListenerCheck(registry::getObject);
    }

    /**
     * Gives share-group container factories (KIP-932) whose phase the application did not set the
     * listener containers' default phase: Spring Kafka's default of 0 would make the endpoint
     * registry start every container, ordinary ones included, before Sumi teaches their error
     * handlers (see {@link ShareFactoryPhase}).
     */
    @Bean
    static ShareFactoryPhase sumiShareFactoryPhase() {
        return new ShareFactoryPhase();
    }

    /** Teaches error-handler and after-rollback-processor beans, including those used outside the endpoint registry. */
    @Bean
    @ConditionalOnProperty(
            prefix = "sumi.kafka",
            name = "configure-error-handlers",
            havingValue = "true",
            matchIfMissing = true)
    static BeanPostProcessor sumiErrorHandlerPostProcessor(ObjectProvider<SumiProperties> properties) {
        return new BeanPostProcessor() {
            @Override
            public Object postProcessAfterInitialization(Object bean, String beanName) {
                if (bean instanceof FailedRecordProcessor handler) {
                    SumiKafkaErrorHandling.configure(
                            handler, properties.getObject().kafka().busyRetryInterval());
                }
                return bean;
            }
        };
    }

    /**
     * Teaches every listener container's error handler at start-up, whatever it is (a bean, one set
     * on the factory, Spring Kafka's default), and refuses one it cannot teach on a container that
     * runs an {@code @IdempotentHandler}.
     */
    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnBean(KafkaListenerEndpointRegistry.class)
    @ConditionalOnProperty(
            prefix = "sumi.kafka",
            name = "configure-error-handlers",
            havingValue = "true",
            matchIfMissing = true)
    SumiErrorHandlerConfigurer sumiErrorHandlerConfigurer(
            ObjectProvider<KafkaListenerEndpointRegistry> registry, SumiProperties properties) {
        // Looked up at start, not injected: a dependency would be started first (with its containers).
        return new SumiErrorHandlerConfigurer(
                registry::getObject,
                properties.kafka().busyRetryInterval(),
                properties.kafka().allowAsyncListeners());
    }

    /** Validates every {@code @IdempotentHandler} listener method once the context is up, so a bad annotation fails start-up. */
    @Bean
    static SmartInitializingSingleton sumiIdempotentHandlerValidator(
            ConfigurableListableBeanFactory beanFactory, ObjectProvider<IdempotentHandlerAdvisor> advisor) {
        return () -> {
            IdempotentHandlerAdvisor kafka = advisor.getObject();
            IdempotentHandlerInterceptor interceptor = kafka.interceptor();
            new IdempotentHandlerVerifier(beanFactory).handlers().forEach((method, userClass) -> {
                if (!kafka.guards(method, userClass)) {
                    return; // a functional bean (the Stream binder) or another binder's method: that binder validates
                    // it
                }
                try {
                    interceptor.definition(method, userClass);
                    IdempotentHandlerInterceptor.checkMessageSource(method);
                } catch (RuntimeException ex) {
                    throw new BeanCreationException(
                            "Invalid @IdempotentHandler on " + method + ": " + ex.getMessage(), ex);
                }
            });
        };
    }

    /** Names the consumers of listener methods as the Kafka binder does, for the ledger's per-consumer gauges. */
    @Bean
    static HandlerConsumers.ListenerNaming sumiKafkaListenerNaming(ObjectProvider<IdempotentHandlerAdvisor> advisor) {
        return (method, userClass) ->
                advisor.getObject().interceptor().definition(method, userClass).consumer();
    }
}
