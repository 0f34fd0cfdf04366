package io.sumi.autoconfigure;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import io.micrometer.observation.ObservationRegistry;
import io.sumi.consumer.IdempotentExecutor;
import io.sumi.consumer.TransactionSupport;
import io.sumi.store.CachingProcessedMessageStore;
import io.sumi.store.LedgerPruner;
import io.sumi.store.ProcessedMessageStore;
import io.sumi.store.jdbc.JdbcProcessedMessageStore;
import java.time.Clock;
import javax.sql.DataSource;
import org.springframework.beans.factory.BeanCreationException;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.datasource.TransactionAwareDataSourceProxy;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.ResourceTransactionManager;

/**
 * The ledger, the executor and the pruning job. Every bean backs off when the application defines
 * its own.
 */
@AutoConfiguration(
        afterName = {
            "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration",
            "org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration",
            "org.springframework.boot.transaction.autoconfigure.TransactionAutoConfiguration",
            "org.springframework.boot.flyway.autoconfigure.FlywayAutoConfiguration"
        })
@EnableConfigurationProperties(SumiProperties.class)
public class SumiAutoConfiguration {

    /** Fails start-up when an {@code @IdempotentHandler} has no binder to handle it. */
    @Bean
    static IdempotentHandlerVerifier sumiIdempotentHandlerVerifier(ConfigurableListableBeanFactory beanFactory) {
        return new IdempotentHandlerVerifier(beanFactory);
    }

    /** The name of the starter's own ledger bean (absent when the application defines a store). */
    static final String LEDGER_BEAN_NAME = "sumiProcessedMessageStore";

    /**
     * The connections of lease renewals, apart from the application's pool (see
     * {@link LeaseRenewalPool}); only for the starter's own ledger. Declared before the ledger, so
     * that its condition sees no store yet unless the application defined one.
     */
    @Bean
    @ConditionalOnMissingBean(ProcessedMessageStore.class)
    @ConditionalOnBean(DataSource.class)
    LeaseRenewalPool sumiLeaseRenewalPool(
            DataSource dataSource, SumiProperties properties, ObjectProvider<MeterRegistry> meterRegistry) {
        return LeaseRenewalPool.of(dataSource, properties.consumer(), meterRegistry.getIfUnique());
    }

    @Bean(LEDGER_BEAN_NAME)
    @ConditionalOnMissingBean
    @ConditionalOnBean(DataSource.class)
    ProcessedMessageStore sumiProcessedMessageStore(
            DataSource dataSource,
            SumiProperties properties,
            ObjectProvider<Clock> clock,
            ObjectProvider<LeaseRenewalPool> renewalPool) {
        SumiProperties.Ledger ledger = properties.ledger();
        if (ledger.store() == SumiProperties.LedgerStore.REDIS) {
            // SumiRedisLedgerAutoConfiguration would have defined the ledger: its module is missing.
            throw new IllegalStateException("sumi.ledger.store=redis needs io.sumi:sumi-store-redis (and Spring Data"
                    + " Redis) on the class path; without it Sumi would keep the ledger in the DataSource instead");
        }
        JdbcProcessedMessageStore.Builder builder = JdbcProcessedMessageStore.builder(dataSource)
                .tableName(ledger.tableName())
                .asynchronousClaimCommit(ledger.asynchronousClaimCommit())
                .clock(clock.getIfUnique(Clock::systemUTC));
        LeaseRenewalPool renewals = renewalPool.getIfAvailable();
        DataSource renewalDataSource = renewals != null ? renewals.dataSource() : null;
        if (renewalDataSource != null) {
            builder.renewalDataSource(renewalDataSource);
        }
        return withCache(builder.build(), ledger);
    }

    /** {@code store} behind the front cache of completed keys, unless {@code sumi.ledger.cache.enabled=false}. */
    static ProcessedMessageStore withCache(ProcessedMessageStore store, SumiProperties.Ledger ledger) {
        if (!ledger.cache().enabled()) {
            return store;
        }
        return new CachingProcessedMessageStore(
                store, ledger.cache().maximumSize(), ledger.cache().expireAfterWrite());
    }

    /** Fails start-up when the starter's ledger table does not exist (see {@link LedgerTableVerifier}). */
    @Bean
    static LedgerTableVerifier sumiLedgerTableVerifier(ConfigurableListableBeanFactory beanFactory) {
        return new LedgerTableVerifier(beanFactory, LEDGER_BEAN_NAME);
    }

    @Bean
    @ConditionalOnMissingBean
    TransactionSupport sumiTransactionSupport(
            ObjectProvider<PlatformTransactionManager> transactionManagers, ObjectProvider<DataSource> dataSource) {
        // The ledger is on the DataSource the store is built on (sumiProcessedMessageStore).
        DataSource ledger = dataSource.getIfUnique();
        if (ledger == null) {
            return TransactionSupport.none();
        }
        // Prefer the manager of the ledger's DataSource; with a Kafka transaction manager beside it,
        // "the unique manager" would open transactions that the ledger takes no part in.
        PlatformTransactionManager manager = transactionManagers
                .orderedStream()
                .filter(candidate -> managesDataSource(candidate, ledger))
                .findFirst()
                .orElseGet(transactionManagers::getIfUnique);
        // Whatever the manager, TransactionSupport checks per call that the ledger's connection takes
        // part in the transaction: AUTO falls back to a lease, TRANSACTIONAL fails clearly.
        return manager != null ? TransactionSupport.of(manager, ledger) : TransactionSupport.none();
    }

    private static boolean managesDataSource(PlatformTransactionManager manager, DataSource dataSource) {
        return manager instanceof ResourceTransactionManager resource
                && resource.getResourceFactory() instanceof DataSource managed
                && unwrap(managed) == unwrap(dataSource);
    }

    private static DataSource unwrap(DataSource dataSource) {
        return dataSource instanceof TransactionAwareDataSourceProxy proxy && proxy.getTargetDataSource() != null
                ? proxy.getTargetDataSource()
                : dataSource;
    }

    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnBean(ProcessedMessageStore.class)
    IdempotentExecutor sumiIdempotentExecutor(
            ProcessedMessageStore store,
            TransactionSupport transactionSupport,
            ObjectProvider<MeterRegistry> meterRegistry,
            ObjectProvider<ObservationRegistry> observationRegistry,
            SumiProperties properties) {
        return IdempotentExecutor.builder(store)
                .transactionSupport(transactionSupport)
                .reconcileAfter(properties.consumer().reconcileAfter())
                .leaseRenewal(properties.consumer().leaseRenewal())
                .maxRun(properties.consumer().maxRun())
                .meterRegistry(meterRegistry.getIfUnique(CompositeMeterRegistry::new))
                .observationRegistry(observationRegistry.getIfUnique(() -> ObservationRegistry.NOOP))
                .build();
    }

    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnBean(ProcessedMessageStore.class)
    LedgerPruner sumiLedgerPruner(
            ProcessedMessageStore store,
            SumiProperties properties,
            ObjectProvider<Clock> clock,
            ObjectProvider<MeterRegistry> meterRegistry) {
        SumiProperties.Ledger ledger = properties.ledger();
        return LedgerPruner.builder(store)
                .retention(ledger.retention())
                .batchSize(ledger.pruning().batchSize())
                .maxBatches(ledger.pruning().maxBatches())
                .clock(clock.getIfUnique(Clock::systemUTC))
                .meterRegistry(meterRegistry.getIfUnique(CompositeMeterRegistry::new))
                .build();
    }

    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnBean(LedgerPruner.class)
    @ConditionalOnProperty(
            prefix = "sumi.ledger.pruning",
            name = "enabled",
            havingValue = "true",
            matchIfMissing = true)
    // The Redis ledger's rows expire by themselves: no job.
    @ConditionalOnProperty(prefix = "sumi.ledger", name = "store", havingValue = "jdbc", matchIfMissing = true)
    LedgerPruningScheduler sumiLedgerPruningScheduler(LedgerPruner pruner, SumiProperties properties) {
        return new LedgerPruningScheduler(pruner, properties.ledger().pruning().cron());
    }

    /** The ledger's per-consumer gauges, registered once the handlers are known. */
    @Bean
    @ConditionalOnProperty(
            prefix = "sumi.ledger.metrics",
            name = "enabled",
            havingValue = "true",
            matchIfMissing = true)
    LedgerMetricsRegistrar sumiLedgerMetricsRegistrar(
            ConfigurableListableBeanFactory beanFactory,
            ObjectProvider<ProcessedMessageStore> store,
            ObjectProvider<MeterRegistry> meterRegistry,
            ObjectProvider<HandlerConsumers.ListenerNaming> listenerNaming,
            ObjectProvider<Clock> clock,
            SumiProperties properties) {
        return new LedgerMetricsRegistrar(
                beanFactory,
                store,
                meterRegistry,
                listenerNaming,
                clock,
                properties.ledger().metrics().refreshInterval());
    }

    /**
     * Without sumi-budgets on the class path, a handler that names a budget would run unbudgeted:
     * start-up fails instead, saying which module to add.
     */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnMissingClass("io.sumi.budget.BudgetRegistry")
    static class NoBudgets {

        @Bean
        static SmartInitializingSingleton sumiBudgetsMissingCheck(ConfigurableListableBeanFactory beanFactory) {
            return () -> BudgetNames.forEachNamed(beanFactory, (beanName, method, budget) -> {
                throw new BeanCreationException(
                        beanName,
                        "@IdempotentHandler on " + method + " names budget '" + budget
                                + "', but Sumi's budgets are not on the class path: add the dependency"
                                + " io.sumi:sumi-budgets (docs/paid-apis.md)");
            });
        }
    }
}
