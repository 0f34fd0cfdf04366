package io.sumi.autoconfigure;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import io.sumi.consumer.IdempotentExecutor;
import io.sumi.consumer.IdempotentHandler;
import io.sumi.consumer.budget.BudgetRegistry;
import io.sumi.kafka.BudgetListenerPauser;
import java.lang.reflect.Method;
import java.time.Clock;
import java.util.Map;
import java.util.Set;
import org.springframework.aop.support.AopUtils;
import org.springframework.beans.factory.BeanCreationException;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.MethodIntrospector;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.core.env.Environment;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.util.ClassUtils;

/**
 * Budgets for paid APIs: the {@link BudgetRegistry} from {@code sumi.budgets.*}, the executor
 * decorated so {@code @IdempotentHandler(budget = ...)} is enforced, run-time reconfiguration
 * ({@link BudgetConfigurationRefresher}), a start-up check that every budget a handler names
 * exists, and, with Spring Kafka, the {@link BudgetListenerPauser} that pauses listener containers
 * while their budget is exhausted.
 */
@AutoConfiguration(
        after = SumiAutoConfiguration.class,
        afterName = "org.springframework.boot.kafka.autoconfigure.KafkaAutoConfiguration")
@EnableConfigurationProperties(SumiBudgetProperties.class)
class SumiBudgetAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean
    BudgetRegistry sumiBudgetRegistry(
            SumiBudgetProperties properties, ObjectProvider<Clock> clock, ObjectProvider<MeterRegistry> meterRegistry) {
        BudgetRegistry.Builder builder = BudgetRegistry.builder()
                .clock(clock.getIfUnique(Clock::systemUTC))
                .meterRegistry(meterRegistry.getIfUnique(CompositeMeterRegistry::new));
        properties.budgets().forEach((name, budget) -> builder.budget(name, budget.toConfig(name)));
        return builder.build();
    }

    @Bean
    @ConditionalOnMissingBean
    BudgetConfigurationRefresher sumiBudgetConfigurationRefresher(Environment environment, BudgetRegistry registry) {
        return new BudgetConfigurationRefresher(environment, registry);
    }

    /** Decorates every {@link IdempotentExecutor} bean with the budgets (lazily: the registry is looked up on first use). */
    @Bean
    static BeanPostProcessor sumiBudgetExecutorPostProcessor(ObjectProvider<BudgetRegistry> registry) {
        return new BeanPostProcessor() {
            @Override
            public Object postProcessAfterInitialization(Object bean, String beanName) {
                if (bean instanceof IdempotentExecutor executor) {
                    return registry.getObject().decorate(executor);
                }
                return bean;
            }
        };
    }

    /** Fails start-up when a handler names a budget that is not configured. */
    @Bean
    static SmartInitializingSingleton sumiBudgetBindingValidator(
            ConfigurableListableBeanFactory beanFactory, ObjectProvider<BudgetRegistry> registry) {
        return () -> {
            Set<String> names = null;
            for (String beanName : beanFactory.getBeanDefinitionNames()) {
                Class<?> type = beanFactory.getType(beanName, false);
                if (type == null) {
                    continue;
                }
                Class<?> userClass = AopUtils.isAopProxy(type) ? type.getSuperclass() : ClassUtils.getUserClass(type);
                Map<Method, IdempotentHandler> methods = MethodIntrospector.selectMethods(
                        userClass, (MethodIntrospector.MetadataLookup<IdempotentHandler>)
                                m -> AnnotatedElementUtils.findMergedAnnotation(m, IdempotentHandler.class));
                for (Map.Entry<Method, IdempotentHandler> entry : methods.entrySet()) {
                    String budget = entry.getValue().budget();
                    if (budget.isBlank()) {
                        continue;
                    }
                    if (names == null) {
                        names = registry.getObject().names();
                    }
                    if (!names.contains(budget)) {
                        throw new BeanCreationException(
                                beanName,
                                "@IdempotentHandler on " + entry.getKey() + " names budget '" + budget
                                        + "', which is not configured: set sumi.budgets." + budget + ".limit (budgets: "
                                        + names + ")");
                    }
                }
            }
        };
    }

    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass({KafkaListener.class, BudgetListenerPauser.class})
    @ConditionalOnProperty(prefix = "sumi.budget-pause", name = "enabled", havingValue = "true", matchIfMissing = true)
    static class KafkaPausing {

        @Bean
        @ConditionalOnMissingBean
        BudgetListenerPauser sumiBudgetListenerPauser(
                BudgetRegistry registry,
                ObjectProvider<KafkaListenerEndpointRegistry> endpointRegistry,
                SumiBudgetProperties properties,
                ObjectProvider<MeterRegistry> meterRegistry) {
            // Looked up at start, not injected: a dependency would be started first (with its containers).
            return new BudgetListenerPauser(
                    registry,
                    endpointRegistry::getIfAvailable,
                    properties.budgetPause().checkInterval(),
                    meterRegistry.getIfUnique(CompositeMeterRegistry::new));
        }
    }
}
