package io.sumi.autoconfigure;

import io.micrometer.core.instrument.MeterRegistry;
import io.sumi.budget.BudgetRegistry;
import io.sumi.consumer.IdempotentExecutor;
import io.sumi.consumer.binder.ListenerPauser;
import io.sumi.rabbit.IdempotencyKeyMessagePostProcessor;
import io.sumi.rabbit.IdempotentRabbitHandlerAdvisor;
import io.sumi.rabbit.IdempotentRabbitHandlerInterceptor;
import io.sumi.rabbit.RabbitBudgetListenerStopper;
import io.sumi.rabbit.RejectAndDontRequeueBatchRecoverer;
import io.sumi.rabbit.SumiRabbitContainerAdvice;
import io.sumi.rabbit.SumiRabbitListenerContainerFactoryPostProcessor;
import org.springframework.amqp.rabbit.annotation.RabbitListener;
import org.springframework.amqp.rabbit.core.RabbitTemplate;
import org.springframework.amqp.rabbit.listener.AbstractMessageListenerContainer;
import org.springframework.amqp.rabbit.retry.MessageRecoverer;
import org.springframework.beans.factory.BeanCreationException;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.context.annotation.Role;

/**
 * {@code @IdempotentHandler} on Spring AMQP {@code @RabbitListener} methods: the advisor, Sumi's
 * container advice on every listener container factory (docs/rabbitmq.md), the budget stopper
 * when budgets exist, and the key passthrough on every {@code RabbitTemplate} bean. Active when
 * {@code sumi-binder-spring-amqp} and Spring AMQP are on the class path.
 */
@AutoConfiguration(
        after = {SumiAutoConfiguration.class, SumiBudgetAutoConfiguration.class},
        afterName = "org.springframework.boot.amqp.autoconfigure.RabbitAutoConfiguration")
@ConditionalOnClass({RabbitListener.class, IdempotentRabbitHandlerAdvisor.class})
@EnableConfigurationProperties(SumiRabbitProperties.class)
@Import(BinderSupport.AutoProxyRegistrar.class)
public class SumiRabbitAutoConfiguration {

    @Bean
    @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
    @ConditionalOnMissingBean
    static IdempotentRabbitHandlerAdvisor sumiIdempotentRabbitHandlerAdvisor(
            ObjectProvider<IdempotentExecutor> executor, ObjectProvider<SumiProperties> properties) {
        // Static and lazy, as the Kafka binder's: the executor is looked up on the first message.
        return new IdempotentRabbitHandlerAdvisor(new IdempotentRabbitHandlerInterceptor(
                executor::getObject, () -> BinderSupport.defaults(properties.getObject())));
    }

    @Bean
    static SumiRabbitListenerContainerFactoryPostProcessor sumiRabbitListenerContainerFactoryPostProcessor(
            ObjectProvider<SumiRabbitProperties> properties,
            ObjectProvider<ListenerPauser<AbstractMessageListenerContainer>> stopper) {
        return SumiRabbitListenerContainerFactoryPostProcessor.withBusyPolicy(
                () -> properties.getObject().busyPolicy(), stopper::getIfAvailable);
    }

    /**
     * The recoverer Boot's listener retry ({@code spring.rabbitmq.listener.*.retry.enabled=true})
     * uses when the application declares no {@code MessageRecoverer}: Boot's default
     * ({@code RejectAndDontRequeueRecoverer}) cannot recover a consumer batch, and Spring AMQP
     * then acknowledges a batch whose retries are spent, so its messages never reach the
     * dead-letter exchange. This one rejects a single message as Boot's does, and a batch whole.
     * An application's own recoverer replaces it (and must recover batches if a consumer-batch
     * factory retries: Sumi refuses it at start-up otherwise).
     */
    @Bean
    @ConditionalOnMissingBean(MessageRecoverer.class)
    static RejectAndDontRequeueBatchRecoverer sumiRabbitMessageRecoverer() {
        return new RejectAndDontRequeueBatchRecoverer();
    }

    /**
     * The budget stopper: stops listener containers while their budget is spent
     * (sumi.budgets.pause.*, as for Kafka); {@link BudgetStoppers}. Only with sumi-budgets on the
     * class path (it is optional).
     */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "io.sumi.budget.BudgetRegistry")
    static class BudgetStopping {

        @Bean
        @BudgetStoppers.Conditions
        RabbitBudgetListenerStopper sumiRabbitBudgetListenerStopper(
                BudgetRegistry budgets, SumiBudgetPauseProperties pause, ObjectProvider<MeterRegistry> meterRegistry) {
            return BudgetStoppers.create(RabbitBudgetListenerStopper::new, budgets, pause, meterRegistry);
        }
    }

    /** Key passthrough on every RabbitTemplate bean (the outbox's publisher has a template of its own). */
    @Bean
    @ConditionalOnProperty(
            prefix = "sumi.rabbit.passthrough",
            name = "enabled",
            havingValue = "true",
            matchIfMissing = true)
    static BeanPostProcessor sumiRabbitTemplatePassthrough(ObjectProvider<SumiRabbitProperties> properties) {
        return new BeanPostProcessor() {
            @Override
            public Object postProcessAfterInitialization(Object bean, String beanName) {
                if (bean instanceof RabbitTemplate template) {
                    template.addBeforePublishPostProcessors(new IdempotencyKeyMessagePostProcessor(
                            properties.getObject().passthrough().headerName()));
                }
                return bean;
            }
        };
    }

    /** Validates every Rabbit {@code @IdempotentHandler} method once the context is up, so a bad annotation fails start-up. */
    @Bean
    static SmartInitializingSingleton sumiIdempotentRabbitHandlerValidator(
            ConfigurableListableBeanFactory beanFactory, ObjectProvider<IdempotentRabbitHandlerAdvisor> advisor) {
        return () -> {
            IdempotentRabbitHandlerAdvisor rabbit = advisor.getObject();
            IdempotentRabbitHandlerInterceptor interceptor = rabbit.interceptor();
            new IdempotentHandlerVerifier(beanFactory).handlers().forEach((method, userClass) -> {
                if (!rabbit.guards(method, userClass)) {
                    return;
                }
                try {
                    interceptor.definition(method, userClass);
                    IdempotentRabbitHandlerInterceptor.checkMessageSource(method, userClass);
                } catch (RuntimeException ex) {
                    throw new BeanCreationException(
                            "Invalid @IdempotentHandler on " + method + ": " + ex.getMessage(), ex);
                }
            });
            // Hand-built container beans carrying Sumi's advice (the factories' containers are
            // checked when Sumi's advice is put on them): their shape, a consumer batch, is not the method's.
            beanFactory
                    .getBeansOfType(AbstractMessageListenerContainer.class, false, false)
                    .forEach((name, container) -> {
                        try {
                            SumiRabbitContainerAdvice.checkListener(container);
                        } catch (RuntimeException ex) {
                            throw new BeanCreationException(name, String.valueOf(ex.getMessage()), ex);
                        }
                    });
        };
    }
}
