package io.sumi.stream;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sumi.consumer.FingerprintMismatchPolicy;
import io.sumi.consumer.HandlerDefaults;
import io.sumi.consumer.HandlerDefinition;
import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentExecutor;
import io.sumi.consumer.TransactionSupport;
import io.sumi.store.jdbc.JdbcProcessedMessageStore;
import io.sumi.testing.CountingStore;
import java.time.Duration;
import javax.sql.DataSource;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.integration.channel.interceptor.GlobalChannelInterceptorWrapper;
import org.springframework.transaction.PlatformTransactionManager;

/**
 * Sumi's wiring for the binder tests, as the starter's SumiStreamAutoConfiguration does it (this
 * module cannot depend on the starter, which depends on it): the ledger on the test database, the
 * executor, the function post-processor and the global channel interceptor.
 */
@Configuration(proxyBeanMethods = false)
class SumiStreamTestConfiguration {

    static final Duration LEASE = Duration.ofSeconds(30);

    @Bean
    MeterRegistry meterRegistry() {
        return new SimpleMeterRegistry();
    }

    @Bean
    CountingStore processedMessageStore(DataSource dataSource) {
        return new CountingStore(JdbcProcessedMessageStore.builder(dataSource).build());
    }

    @Bean
    IdempotentExecutor idempotentExecutor(
            CountingStore store, PlatformTransactionManager transactionManager, MeterRegistry meters) {
        return IdempotentExecutor.builder(store)
                .transactionSupport(TransactionSupport.of(transactionManager))
                .meterRegistry(meters)
                .build();
    }

    @Bean
    static IdempotentFunctionPostProcessor idempotentFunctionPostProcessor(
            ObjectProvider<IdempotentExecutor> executor) {
        return new IdempotentFunctionPostProcessor(
                executor::getObject,
                () -> new HandlerDefaults(
                        IdempotencyMode.AUTO,
                        LEASE,
                        FingerprintMismatchPolicy.WARN,
                        HandlerDefinition.DEFAULT_KEY_HEADERS),
                new StreamSettings(Duration.ofMillis(50), Duration.ofSeconds(1), StreamSettings.DEFAULT_KEY_HEADER));
    }

    @Bean
    SumiKafkaBinderContainerCustomizer sumiKafkaBinderContainerCustomizer() {
        return new SumiKafkaBinderContainerCustomizer(() -> Duration.ofMillis(200));
    }

    @Bean
    GlobalChannelInterceptorWrapper sumiStreamChannelInterceptor() {
        return new SumiStreamChannelInterceptor(StreamSettings.DEFAULT_KEY_HEADER).asGlobalInterceptor();
    }
}
