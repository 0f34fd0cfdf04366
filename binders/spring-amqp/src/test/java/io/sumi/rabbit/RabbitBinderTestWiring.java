package io.sumi.rabbit;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sumi.consumer.HandlerDefaults;
import io.sumi.consumer.IdempotentExecutor;
import io.sumi.store.ProcessedMessageStore;
import io.sumi.store.jdbc.JdbcProcessedMessageStore;
import io.sumi.testing.TestDatabase;
import javax.sql.DataSource;
import org.springframework.aop.framework.autoproxy.DefaultAdvisorAutoProxyCreator;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * What the binder's Spring tests wire alike, as the starter would: Sumi's advisor on
 * {@code @IdempotentHandler} methods (class-based proxies), the local PostgreSQL as the ledger,
 * and a meter registry. Each test adds its executor, container factories and listeners.
 */
@Configuration(proxyBeanMethods = false)
class RabbitBinderTestWiring {

    @Bean
    static DefaultAdvisorAutoProxyCreator autoProxyCreator() {
        DefaultAdvisorAutoProxyCreator creator = new DefaultAdvisorAutoProxyCreator();
        creator.setProxyTargetClass(true);
        return creator;
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
}
