package io.sumi.autoconfigure;

import io.micrometer.core.instrument.MeterRegistry;
import io.sumi.budget.BudgetRegistry;
import io.sumi.consumer.IdempotentExecutor;
import io.sumi.consumer.binder.ListenerPauser;
import io.sumi.jms.IdempotencyKeyJmsPostProcessor;
import io.sumi.jms.IdempotentJmsHandlerAdvisor;
import io.sumi.jms.IdempotentJmsHandlerInterceptor;
import io.sumi.jms.JmsBudgetListenerStopper;
import io.sumi.jms.SumiJmsListenerContainerFactoryPostProcessor;
import io.sumi.jms.SumiJmsSettings;
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
import org.springframework.jms.annotation.JmsListener;
import org.springframework.jms.core.JmsTemplate;
import org.springframework.jms.listener.AbstractMessageListenerContainer;
import org.springframework.jms.support.converter.MessageConverter;

/**
 * {@code @IdempotentHandler} on Spring JMS {@code @JmsListener} methods: the advisor, Sumi's
 * listener wrapper on every container a listener container factory creates (docs/jms.md), the
 * budget stopper when budgets exist, and the key passthrough on every {@code JmsTemplate} bean's
 * converter. Active when {@code sumi-binder-spring-jms} and Spring JMS are on the class path.
 */
@AutoConfiguration(
        after = {SumiAutoConfiguration.class, SumiBudgetAutoConfiguration.class},
        afterName = "org.springframework.boot.jms.autoconfigure.JmsAutoConfiguration")
@ConditionalOnClass({JmsListener.class, IdempotentJmsHandlerAdvisor.class})
@EnableConfigurationProperties(SumiJmsProperties.class)
@Import(BinderSupport.AutoProxyRegistrar.class)
public class SumiJmsAutoConfiguration {

    @Bean
    @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
    @ConditionalOnMissingBean
    static IdempotentJmsHandlerAdvisor sumiIdempotentJmsHandlerAdvisor(
            ObjectProvider<IdempotentExecutor> executor, ObjectProvider<SumiProperties> properties) {
        // Static and lazy, as the other binders': the executor is looked up on the first message.
        return new IdempotentJmsHandlerAdvisor(new IdempotentJmsHandlerInterceptor(
                executor::getObject, () -> BinderSupport.defaults(properties.getObject())));
    }

    @Bean
    static SumiJmsListenerContainerFactoryPostProcessor sumiJmsListenerContainerFactoryPostProcessor(
            ObjectProvider<SumiJmsProperties> properties,
            ObjectProvider<ListenerPauser<AbstractMessageListenerContainer>> stopper) {
        return new SumiJmsListenerContainerFactoryPostProcessor(
                () -> {
                    SumiJmsProperties jms = properties.getObject();
                    return new SumiJmsSettings(jms.busyRetryInterval(), jms.busyMaxWait(), jms.deadLetterQueue());
                },
                stopper::getIfAvailable);
    }

    /**
     * The budget stopper: stops listener containers while their budget is spent
     * (sumi.budgets.pause.*, as for Kafka and RabbitMQ); {@link BudgetStoppers}. Only with sumi-budgets on the
     * class path (it is optional).
     */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "io.sumi.budget.BudgetRegistry")
    static class BudgetStopping {

        @Bean
        @BudgetStoppers.Conditions
        JmsBudgetListenerStopper sumiJmsBudgetListenerStopper(
                BudgetRegistry budgets, SumiBudgetPauseProperties pause, ObjectProvider<MeterRegistry> meterRegistry) {
            return BudgetStoppers.create(JmsBudgetListenerStopper::new, budgets, pause, meterRegistry);
        }
    }

    /** Key passthrough on every JmsTemplate bean's converter (convertAndSend). */
    @Bean
    @ConditionalOnProperty(
            prefix = "sumi.jms.passthrough",
            name = "enabled",
            havingValue = "true",
            matchIfMissing = true)
    static BeanPostProcessor sumiJmsTemplatePassthrough(ObjectProvider<SumiJmsProperties> properties) {
        return new BeanPostProcessor() {
            @Override
            public Object postProcessAfterInitialization(Object bean, String beanName) {
                if (bean instanceof JmsTemplate template) {
                    MessageConverter converter = template.getMessageConverter();
                    if (converter != null
                            && !(converter instanceof IdempotencyKeyJmsPostProcessor.PassthroughConverter)) {
                        template.setMessageConverter(new IdempotencyKeyJmsPostProcessor(
                                        properties.getObject().passthrough().headerName())
                                .converter(converter));
                    }
                }
                return bean;
            }
        };
    }

    /** Validates every JMS {@code @IdempotentHandler} method once the context is up, so a bad annotation fails start-up. */
    @Bean
    static SmartInitializingSingleton sumiIdempotentJmsHandlerValidator(
            ConfigurableListableBeanFactory beanFactory, ObjectProvider<IdempotentJmsHandlerAdvisor> advisor) {
        return () -> {
            IdempotentJmsHandlerAdvisor jms = advisor.getObject();
            IdempotentJmsHandlerInterceptor interceptor = jms.interceptor();
            new IdempotentHandlerVerifier(beanFactory).handlers().forEach((method, userClass) -> {
                if (!jms.guards(method, userClass)) {
                    return;
                }
                try {
                    interceptor.definition(method, userClass);
                    IdempotentJmsHandlerInterceptor.checkMessageSource(method);
                } catch (RuntimeException ex) {
                    throw new BeanCreationException(
                            "Invalid @IdempotentHandler on " + method + ": " + ex.getMessage(), ex);
                }
            });
        };
    }
}
