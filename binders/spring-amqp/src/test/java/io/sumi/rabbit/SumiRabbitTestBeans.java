package io.sumi.rabbit;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sumi.consumer.IdempotentExecutor;
import io.sumi.consumer.TransactionSupport;
import io.sumi.store.ProcessedMessageStore;
import java.time.Duration;
import javax.sql.DataSource;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;

/**
 * The binder wired by hand, as the starter would: {@link RabbitBinderTestWiring}, Sumi's advice on every
 * container factory, and an executor on the local PostgreSQL's ledger.
 * The Rabbit integration tests import it next to their queues and listeners.
 */
@Configuration(proxyBeanMethods = false)
@Import(RabbitBinderTestWiring.class)
class SumiRabbitTestBeans {

    static final Duration BUSY_INTERVAL = Duration.ofMillis(300);

    @Bean
    static SumiRabbitListenerContainerFactoryPostProcessor sumiContainerFactories() {
        return new SumiRabbitListenerContainerFactoryPostProcessor(() -> BUSY_INTERVAL, () -> null);
    }

    @Bean
    IdempotentExecutor executor(ProcessedMessageStore store, DataSource dataSource, SimpleMeterRegistry meters) {
        return IdempotentExecutor.builder(store)
                .transactionSupport(TransactionSupport.of(new DataSourceTransactionManager(dataSource), dataSource))
                .meterRegistry(meters)
                .build();
    }
}
