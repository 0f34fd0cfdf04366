package io.sumi.rabbit;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sumi.consumer.HandlerDefaults;
import io.sumi.consumer.IdempotentExecutor;
import io.sumi.consumer.TransactionSupport;
import io.sumi.store.ProcessedMessageStore;
import io.sumi.store.jdbc.JdbcProcessedMessageStore;
import io.sumi.testing.TestDatabase;
import java.time.Duration;
import javax.sql.DataSource;
import org.springframework.aop.framework.autoproxy.DefaultAdvisorAutoProxyCreator;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;

/**
 * The binder wired by hand, as the starter would: the advisor on {@code @IdempotentHandler}
 * methods, Sumi's advice on every container factory, an executor on the local PostgreSQL's ledger.
 * The Rabbit integration tests import it next to their queues and listeners.
 */
@Configuration(proxyBeanMethods = false)
class SumiRabbitTestBeans {

    static final Duration BUSY_INTERVAL = Duration.ofMillis(300);

    @Bean
    static DefaultAdvisorAutoProxyCreator autoProxyCreator() {
        DefaultAdvisorAutoProxyCreator creator = new DefaultAdvisorAutoProxyCreator();
        creator.setProxyTargetClass(true);
        return creator;
    }

    @Bean
    static SumiRabbitListenerContainerFactoryPostProcessor sumiContainerFactories() {
        return new SumiRabbitListenerContainerFactoryPostProcessor(() -> BUSY_INTERVAL, () -> null);
    }

    @Bean
    static IdempotentRabbitHandlerAdvisor sumiAdvisor(ObjectProvider<IdempotentExecutor> executor) {
        return new IdempotentRabbitHandlerAdvisor(
                new IdempotentRabbitHandlerInterceptor(executor::getObject, HandlerDefaults::standard));
    }

    /** The shared test pool: not closed with the context. */
    @Bean(destroyMethod = "")
    DataSource dataSource() {
        return TestDatabase.POSTGRESQL.dataSource();
    }

    @Bean
    ProcessedMessageStore store(DataSource dataSource) {
        return JdbcProcessedMessageStore.builder(dataSource).build();
    }

    @Bean
    SimpleMeterRegistry meters() {
        return new SimpleMeterRegistry();
    }

    @Bean
    IdempotentExecutor executor(ProcessedMessageStore store, DataSource dataSource, SimpleMeterRegistry meters) {
        return IdempotentExecutor.builder(store)
                .transactionSupport(TransactionSupport.of(new DataSourceTransactionManager(dataSource), dataSource))
                .meterRegistry(meters)
                .build();
    }
}
