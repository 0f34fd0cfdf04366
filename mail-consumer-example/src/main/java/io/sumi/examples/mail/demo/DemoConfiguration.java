package io.sumi.examples.mail.demo;

import io.micrometer.core.instrument.MeterRegistry;
import io.sumi.examples.mail.MailConsumerProperties;
import io.sumi.examples.mail.SmtpMailGateway;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Primary;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.core.KafkaAdmin;
import org.springframework.kafka.core.KafkaTemplate;

/** The demo's beans; present only in demo mode (see {@link DemoModeInitializer}). */
@Configuration(proxyBeanMethods = false)
@ConditionalOnBooleanProperty("sumi.demo.enabled")
@EnableConfigurationProperties(DemoProperties.class)
public class DemoConfiguration {

    @Bean
    @Primary
    FlakyMailGateway flakyMailGateway(SmtpMailGateway smtp) {
        return new FlakyMailGateway(smtp);
    }

    @Bean
    DeadLetters deadLetters() {
        return new DeadLetters();
    }

    @Bean
    MailDemo mailDemo(DemoProperties demo, MailConsumerProperties mail, @Qualifier(DemoServices.BEAN_NAME) DemoServices services,
            KafkaTemplate<String, String> template, KafkaAdmin admin, KafkaListenerEndpointRegistry listeners, MeterRegistry meters,
            FlakyMailGateway gateway, DeadLetters deadLetters, JdbcTemplate jdbc,
            @Value("${sumi.ledger.table-name:processed_messages}") String ledgerTable) {
        return new MailDemo(demo, mail, services, template, admin, listeners, meters, gateway, deadLetters, jdbc, ledgerTable);
    }
}
