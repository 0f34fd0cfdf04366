package io.sumi.examples.charge.demo;

import io.micrometer.core.instrument.MeterRegistry;
import io.sumi.budget.BudgetRegistry;
import io.sumi.examples.charge.ChargeConsumerProperties;
import io.sumi.examples.support.EmbeddedServices;
import io.sumi.kafka.BudgetListenerPauser;
import io.sumi.test.CrashInjector;
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

    /**
     * The crashes between a charge and its completion: Sumi's test kit's injector (in tests the
     * kit's assertions see the same one).
     */
    @Bean
    static CrashInjector crashInjector() {
        return new CrashInjector();
    }

    /** Puts the crash injector around the ledger. */
    @Bean
    static BeanPostProcessor crashInjectingLedgerPostProcessor(CrashInjector crashes) {
        return crashes.postProcessor();
    }

    @Bean
    DeadLetters deadLetters() {
        return new DeadLetters();
    }

    @Bean
    ChargeDemo chargeDemo(
            @Qualifier(EmbeddedServices.BEAN_NAME) EmbeddedServices<FakePaymentProvider> services,
            KafkaTemplate<String, String> template,
            CrashInjector crashes,
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
                crashes,
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
