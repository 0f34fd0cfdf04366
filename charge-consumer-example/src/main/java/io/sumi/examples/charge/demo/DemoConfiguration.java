package io.sumi.examples.charge.demo;

import io.micrometer.core.instrument.MeterRegistry;
import io.sumi.consumer.budget.BudgetRegistry;
import io.sumi.examples.charge.ChargeConsumerProperties;
import io.sumi.examples.support.EmbeddedServices;
import io.sumi.kafka.BudgetListenerPauser;
import io.sumi.store.ProcessedMessageStore;
import javax.sql.DataSource;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.core.KafkaTemplate;

/** The demo's beans, present only in demo mode. */
@Configuration(proxyBeanMethods = false)
@ConditionalOnProperty(name = DemoModeInitializer.ENABLED, havingValue = "true")
class DemoConfiguration {

    /** Wraps the ledger so the demo can crash between a charge and its completion. */
    @Bean
    static BeanPostProcessor crashInjectingLedgerPostProcessor() {
        return new BeanPostProcessor() {
            @Override
            public Object postProcessAfterInitialization(Object bean, String beanName) {
                return bean instanceof ProcessedMessageStore store && !(bean instanceof CrashInjectingLedger)
                        ? new CrashInjectingLedger(store)
                        : bean;
            }
        };
    }

    @Bean
    DeadLetters deadLetters() {
        return new DeadLetters();
    }

    @Bean
    ChargeDemo chargeDemo(
            @Qualifier(EmbeddedServices.BEAN_NAME) EmbeddedServices<FakePaymentProvider> services,
            KafkaTemplate<String, String> template,
            ProcessedMessageStore ledger,
            JdbcTemplate jdbc,
            BudgetRegistry budgets,
            BudgetListenerPauser pauser,
            MeterRegistry meters,
            DeadLetters deadLetters,
            ChargeConsumerProperties properties,
            KafkaListenerEndpointRegistry containers,
            DataSource dataSource) {
        return new ChargeDemo(
                services.service(),
                template,
                (CrashInjectingLedger) ledger,
                jdbc,
                budgets,
                pauser,
                meters,
                deadLetters,
                properties,
                containers,
                dataSource);
    }
}
