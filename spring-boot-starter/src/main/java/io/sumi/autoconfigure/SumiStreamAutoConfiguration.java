package io.sumi.autoconfigure;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import io.sumi.budget.BudgetRegistry;
import io.sumi.consumer.HandlerDefaults;
import io.sumi.consumer.IdempotentExecutor;
import io.sumi.stream.BudgetBindingPauser;
import io.sumi.stream.IdempotentFunctionPostProcessor;
import io.sumi.stream.SumiKafkaBinderContainerCustomizer;
import io.sumi.stream.SumiStreamChannelInterceptor;
import java.util.Set;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.cloud.stream.binding.BindingService;
import org.springframework.cloud.stream.binding.BindingsLifecycleController;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Role;
import org.springframework.integration.channel.interceptor.GlobalChannelInterceptorWrapper;

/**
 * {@code @IdempotentHandler} on Spring Cloud Stream functional beans, on any binder: the
 * post-processor that wraps annotated {@code Consumer} / {@code Function} beans, and the global
 * channel interceptor that shows them their message's headers and puts the key on what they send.
 * Active when Spring Cloud Stream and Sumi's binder for it are on the class path; each bean backs
 * off when the application defines its own.
 */
@AutoConfiguration(
        after = {SumiAutoConfiguration.class, SumiBudgetAutoConfiguration.class},
        afterName = "org.springframework.cloud.stream.config.BindingServiceConfiguration")
@ConditionalOnClass(
        name = "org.springframework.cloud.stream.function.StreamBridge",
        value = IdempotentFunctionPostProcessor.class)
@EnableConfigurationProperties(SumiStreamProperties.class)
public class SumiStreamAutoConfiguration {

    /** The name of the global channel interceptor bean; define a bean of this name to replace it. */
    static final String CHANNEL_INTERCEPTOR_BEAN_NAME = "sumiStreamChannelInterceptor";

    @Bean
    @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
    @ConditionalOnMissingBean
    static IdempotentFunctionPostProcessor sumiIdempotentFunctionPostProcessor(
            ObjectProvider<IdempotentExecutor> executor,
            ObjectProvider<SumiProperties> properties,
            ObjectProvider<SumiStreamProperties> streamProperties) {
        // Static, and lazy where it can be: the executor (and with it the DataSource) is looked up
        // on the first message; the properties when the first annotated function bean is wrapped.
        return new IdempotentFunctionPostProcessor(
                executor::getObject,
                () -> defaults(properties.getObject()),
                () -> streamProperties.getObject().settings());
    }

    @Bean(name = CHANNEL_INTERCEPTOR_BEAN_NAME)
    @ConditionalOnMissingBean(name = CHANNEL_INTERCEPTOR_BEAN_NAME)
    GlobalChannelInterceptorWrapper sumiStreamChannelInterceptor(SumiStreamProperties properties) {
        return new SumiStreamChannelInterceptor(properties.settings().keyHeader()).asGlobalInterceptor();
    }

    /**
     * The Kafka binder's listener containers learn Sumi's exceptions (a busy key, a spent budget, a
     * row awaiting reconciliation are delivered again by the container, never skipped): needs the
     * Kafka binder and Sumi's Spring Kafka binder (for the classification). The Kafka binder takes
     * one {@code ListenerContainerCustomizer}: with the application's own, this backs off and the
     * application's customizer should call Sumi's (see {@link SumiKafkaBinderContainerCustomizer}).
     */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(
            name = {
                "org.springframework.cloud.stream.binder.kafka.KafkaMessageChannelBinder",
                "io.sumi.kafka.SumiKafkaErrorHandling"
            })
    @ConditionalOnProperty(
            prefix = "sumi.kafka",
            name = "configure-error-handlers",
            havingValue = "true",
            matchIfMissing = true)
    static class KafkaBinderErrorHandling {

        @Bean
        @ConditionalOnMissingBean(type = "org.springframework.cloud.stream.config.ListenerContainerCustomizer")
        SumiKafkaBinderContainerCustomizer sumiKafkaBinderContainerCustomizer(
                ObjectProvider<SumiStreamProperties> properties) {
            return new SumiKafkaBinderContainerCustomizer(
                    () -> properties.getObject().busyRetryInterval());
        }
    }

    /**
     * Pauses the input bindings of budgeted functions while their budget is open, and resumes them
     * when it can take calls again, through {@code BindingsLifecycleController} (the same switch as
     * the {@code bindings} actuator endpoint). Off with {@code sumi.budgets.pause.enabled=false}.
     */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "io.sumi.budget.BudgetRegistry")
    @ConditionalOnProperty(prefix = "sumi.budgets.pause", name = "enabled", havingValue = "true", matchIfMissing = true)
    static class BindingPausing {

        @Bean
        @ConditionalOnMissingBean
        @ConditionalOnBean({BudgetRegistry.class, BindingsLifecycleController.class, BindingService.class})
        BudgetBindingPauser sumiBudgetBindingPauser(
                BudgetRegistry budgets,
                BindingsLifecycleController bindings,
                BindingService bindingService,
                IdempotentFunctionPostProcessor functions,
                SumiBudgetPauseProperties pause,
                ObjectProvider<MeterRegistry> meterRegistry) {
            return new BudgetBindingPauser(
                    budgets,
                    bindings,
                    functions::functionBudgets,
                    () -> Set.of(bindingService.getConsumerBindingNames()),
                    pause.checkInterval(),
                    meterRegistry.getIfUnique(CompositeMeterRegistry::new));
        }
    }

    static HandlerDefaults defaults(SumiProperties properties) {
        return BinderSupport.defaults(properties);
    }
}
