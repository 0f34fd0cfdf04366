package io.sumi.autoconfigure;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import io.sumi.budget.BudgetRegistry;
import io.sumi.budget.BudgetScope;
import io.sumi.budget.SpendStore;
import io.sumi.budget.jdbc.JdbcSpendStore;
import io.sumi.consumer.IdempotentExecutor;
import io.sumi.kafka.BudgetListenerPauser;
import java.time.Clock;
import java.util.Set;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.BeanCreationException;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;
import org.springframework.dao.DataAccessException;
import org.springframework.jdbc.BadSqlGrammarException;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.util.function.SingletonSupplier;

/**
 * Budgets for paid APIs: the {@link BudgetRegistry} from {@code sumi.budgets.*}, the executor
 * decorated so {@code @IdempotentHandler(budget = ...)} is enforced, run-time reconfiguration
 * ({@link BudgetConfigurationRefresher}), a start-up check that every budget a handler names
 * exists, and, with Spring Kafka, the {@link BudgetListenerPauser} that pauses listener containers
 * while their budget is exhausted. Active when sumi-budgets (optional for the starter) is on the
 * class path; without it, a handler that names a budget fails start-up ({@link SumiAutoConfiguration}).
 */
@AutoConfiguration(
        after = SumiAutoConfiguration.class,
        afterName = {
            "org.springframework.boot.kafka.autoconfigure.KafkaAutoConfiguration",
            "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration"
        })
@ConditionalOnClass(BudgetRegistry.class)
@EnableConfigurationProperties({SumiBudgetProperties.class, SumiBudgetPauseProperties.class})
public class SumiBudgetAutoConfiguration {

    /**
     * The shared store of fleet budgets: the ledger's DataSource (tables {@code sumi_budget_*} of
     * sumi-migrations). With it, budgets without {@code scope} are fleet budgets.
     */
    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnBean(DataSource.class)
    SpendStore sumiSpendStore(DataSource dataSource, ObjectProvider<Clock> clock) {
        return JdbcSpendStore.builder(dataSource)
                .clock(clock.getIfUnique(Clock::systemUTC))
                .build();
    }

    /** The registry; Spring closes it on shutdown, which gives the fleet budgets' unspent chunks back. */
    @Bean
    @ConditionalOnMissingBean
    BudgetRegistry sumiBudgetRegistry(
            SumiBudgetProperties properties,
            ObjectProvider<Clock> clock,
            ObjectProvider<MeterRegistry> meterRegistry,
            ObjectProvider<SpendStore> spendStore) {
        BudgetRegistry.Builder builder = BudgetRegistry.builder()
                .clock(clock.getIfUnique(Clock::systemUTC))
                .meterRegistry(meterRegistry.getIfUnique(CompositeMeterRegistry::new))
                .spendStore(spendStore.getIfUnique());
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

    /**
     * Fails start-up when a fleet budget is configured and the store's tables are missing: every
     * call would otherwise be refused (fail closed) until they exist.
     */
    @Bean
    static SmartInitializingSingleton sumiSpendStoreVerifier(
            ObjectProvider<SumiBudgetProperties> properties, ObjectProvider<SpendStore> spendStore) {
        return () -> {
            SpendStore store = spendStore.getIfUnique();
            if (store == null) {
                return;
            }
            boolean anyFleet = properties.getObject().budgets().values().stream()
                    .anyMatch(budget -> budget.scope() == null || budget.scope() == BudgetScope.FLEET);
            if (!anyFleet) {
                return;
            }
            try {
                store.read("sumi-start-up-check", 0);
            } catch (BadSqlGrammarException ex) {
                throw new IllegalStateException(
                        "Sumi's fleet budgets need the tables sumi_budget_limit and sumi_budget_spend in the"
                                + " application's DataSource ("
                                + ex.getMostSpecificCause().getMessage() + "). Apply"
                                + " Sumi's migrations (io.sumi:sumi-migrations; with Flyway add"
                                + " classpath:db/sumi/{vendor} to spring.flyway.locations), or set"
                                + " sumi.budgets.<name>.scope=instance.",
                        ex);
            } catch (DataAccessException ex) {
                LoggerFactory.getLogger(SumiBudgetAutoConfiguration.class)
                        .warn("Could not check the tables of Sumi's fleet budgets at start-up: {}", ex.getMessage());
            }
        };
    }

    /** Fails start-up when a handler names a budget that is not configured. */
    @Bean
    static SmartInitializingSingleton sumiBudgetBindingValidator(
            ConfigurableListableBeanFactory beanFactory, ObjectProvider<BudgetRegistry> registry) {
        return () -> {
            // Looked up on the first handler that names a budget.
            Supplier<Set<String>> names =
                    SingletonSupplier.of(() -> registry.getObject().names());
            BudgetNames.forEachNamed(beanFactory, (beanName, method, budget) -> {
                if (!names.get().contains(budget)) {
                    throw new BeanCreationException(
                            beanName,
                            "@IdempotentHandler on " + method + " names budget '" + budget
                                    + "', which is not configured: set sumi.budgets." + budget + ".limit (budgets: "
                                    + names.get() + ")");
                }
            });
        };
    }

    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass({KafkaListener.class, BudgetListenerPauser.class})
    @ConditionalOnProperty(prefix = "sumi.budgets.pause", name = "enabled", havingValue = "true", matchIfMissing = true)
    static class KafkaPausing {

        @Bean
        @ConditionalOnMissingBean
        BudgetListenerPauser sumiBudgetListenerPauser(
                BudgetRegistry registry,
                ObjectProvider<KafkaListenerEndpointRegistry> endpointRegistry,
                SumiBudgetPauseProperties pause,
                ObjectProvider<MeterRegistry> meterRegistry) {
            // Looked up at start, not injected: a dependency would be started first (with its containers).
            return new BudgetListenerPauser(
                    registry,
                    endpointRegistry::getIfAvailable,
                    pause.checkInterval(),
                    meterRegistry.getIfUnique(CompositeMeterRegistry::new));
        }
    }
}
