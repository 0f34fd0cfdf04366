package io.sumi.examples.mail.demo;

import com.icegreen.greenmail.util.GreenMail;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.config.MeterFilter;
import io.micrometer.core.instrument.distribution.DistributionStatisticConfig;
import io.sumi.examples.mail.MailConsumerProperties;
import io.sumi.examples.mail.SmtpMailGateway;
import io.sumi.examples.mail.orders.OrderService;
import io.sumi.examples.support.EmbeddedServices;
import io.sumi.outbox.OutboxPublisher;
import io.sumi.outbox.OutboxTable;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.beans.factory.config.BeanPostProcessor;
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

    /** The timer of the outbox's dispatch lag (created → acknowledged), per topic. */
    static final String DISPATCH_LATENCY = "outbox.dispatch.latency";

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
    BrokerCopies brokerCopies(
            KafkaTemplate<String, String> template,
            MailConsumerProperties mail,
            ObjectProvider<RabbitMailMode> rabbit) {
        RabbitMailMode mode = rabbit.getIfAvailable();
        return mode != null
                ? new BrokerCopies(mode, mail.topic(), mail.partitions())
                : new BrokerCopies(template, mail.topic(), mail.partitions());
    }

    /** The rabbitmq mode (profile {@code rabbitmq}): copies and keyless messages go to RabbitMQ. */
    @Bean
    @org.springframework.boot.autoconfigure.condition.ConditionalOnProperty(
            name = "mail-consumer.broker",
            havingValue = "rabbitmq")
    RabbitMailMode rabbitMailMode(
            org.springframework.amqp.rabbit.core.RabbitTemplate template,
            org.springframework.amqp.core.AmqpAdmin admin,
            org.springframework.amqp.rabbit.listener.RabbitListenerEndpointRegistry listeners,
            MailConsumerProperties mail) {
        return new RabbitMailMode(template, admin, listeners, mail.topic());
    }

    /**
     * Two touches on Sumi's beans, for the demo only: the outbox's publisher (the starter's Kafka
     * publisher) is wrapped so that {@link BrokerCopies} sees what it sent; and the meter registry
     * computes percentiles of the outbox's dispatch lag (a {@code SimpleMeterRegistry} keeps no
     * histogram buckets; with Prometheus, {@code outbox_dispatch_latency_seconds_bucket} gives them).
     */
    @Bean
    static BeanPostProcessor demoOutboxPostProcessor(ObjectProvider<BrokerCopies> copies) {
        return new BeanPostProcessor() {

            @Override
            public Object postProcessBeforeInitialization(Object bean, String beanName) {
                if (bean instanceof MeterRegistry registry) {
                    registry.config().meterFilter(new MeterFilter() {
                        @Override
                        public DistributionStatisticConfig configure(Meter.Id id, DistributionStatisticConfig config) {
                            return id.getName().equals(DISPATCH_LATENCY)
                                    ? DistributionStatisticConfig.builder()
                                            .percentiles(0.5, 0.95, 0.99)
                                            .percentilePrecision(2)
                                            .build()
                                            .merge(config)
                                    : config;
                        }
                    });
                }
                return bean;
            }

            @Override
            public Object postProcessAfterInitialization(Object bean, String beanName) {
                return bean instanceof OutboxPublisher publisher && !(bean instanceof BrokerCopies.CopyingPublisher)
                        ? new BrokerCopies.CopyingPublisher(publisher, copies)
                        : bean;
            }
        };
    }

    @Bean
    MailDemo mailDemo(
            DemoProperties demo,
            MailConsumerProperties mail,
            @Qualifier(EmbeddedServices.BEAN_NAME) EmbeddedServices<GreenMail> services,
            OrderService orders,
            OutboxTable outbox,
            BrokerCopies copies,
            KafkaTemplate<String, String> template,
            KafkaAdmin admin,
            KafkaListenerEndpointRegistry listeners,
            MeterRegistry meters,
            FlakyMailGateway gateway,
            DeadLetters deadLetters,
            JdbcTemplate jdbc,
            @Value("${sumi.ledger.table-name:processed_messages}") String ledgerTable,
            ObjectProvider<RabbitMailMode> rabbit) {
        return new MailDemo(
                        demo,
                        mail,
                        services,
                        orders,
                        outbox,
                        copies,
                        template,
                        admin,
                        listeners,
                        meters,
                        gateway,
                        deadLetters,
                        jdbc,
                        ledgerTable)
                .withRabbit(rabbit.getIfAvailable());
    }
}
