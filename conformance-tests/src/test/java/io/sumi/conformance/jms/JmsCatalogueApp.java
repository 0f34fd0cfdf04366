package io.sumi.conformance.jms;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sumi.budget.BudgetRegistry;
import io.sumi.conformance.BudgetWindow;
import io.sumi.conformance.LedgerFaults;
import io.sumi.conformance.Work;
import java.nio.file.Files;
import org.apache.activemq.artemis.api.core.QueueConfiguration;
import org.apache.activemq.artemis.api.core.RoutingType;
import org.apache.activemq.artemis.api.core.SimpleString;
import org.apache.activemq.artemis.core.config.Configuration;
import org.apache.activemq.artemis.core.config.impl.ConfigurationImpl;
import org.apache.activemq.artemis.core.server.embedded.EmbeddedActiveMQ;
import org.apache.activemq.artemis.core.settings.impl.AddressSettings;
import org.apache.activemq.artemis.jms.client.ActiveMQConnectionFactory;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The JMS application of the catalogue: an ActiveMQ Artemis broker in this JVM configured as a
 * production broker for Sumi would be (max-delivery-attempts {@value #MAX_DELIVERY_ATTEMPTS}, then
 * the {@code DLQ} address), Spring Boot's JMS auto-configuration (session-transacted listener
 * containers), the starter.
 */
@SpringBootConfiguration
@EnableAutoConfiguration(
        excludeName = {
            "org.springframework.boot.kafka.autoconfigure.KafkaAutoConfiguration",
            "org.springframework.boot.kafka.autoconfigure.metrics.KafkaMetricsAutoConfiguration",
            "org.springframework.boot.amqp.autoconfigure.RabbitAutoConfiguration",
            "org.springframework.boot.amqp.autoconfigure.health.RabbitHealthContributorAutoConfiguration",
            "org.springframework.boot.amqp.autoconfigure.metrics.RabbitMetricsAutoConfiguration",
            "org.springframework.boot.artemis.autoconfigure.ArtemisAutoConfiguration"
        })
@Import({JmsListeners.class, LedgerFaults.class})
public class JmsCatalogueApp {

    static final int MAX_DELIVERY_ATTEMPTS = 3;
    static final int SERVER_ID = 77;

    @Bean
    Work work(JdbcTemplate jdbc) {
        return new Work(jdbc);
    }

    @Bean
    SimpleMeterRegistry meters() {
        return new SimpleMeterRegistry();
    }

    @Bean
    BudgetWindow budgetWindow() {
        return new BudgetWindow();
    }

    /** The budget-bound listener's budget, on the window's clock (the starter's registry backs off). */
    @Bean
    BudgetRegistry budgetRegistry(BudgetWindow window, SimpleMeterRegistry meters) {
        return window.registry(meters, "jms-budget");
    }

    @Bean(destroyMethod = "stop")
    EmbeddedActiveMQ artemis() throws Exception {
        Configuration configuration = new ConfigurationImpl()
                .setPersistenceEnabled(false)
                .setSecurityEnabled(false)
                .setJMXManagementEnabled(false)
                .addAcceptorConfiguration("in-vm", "vm://" + SERVER_ID)
                .addAddressSetting(
                        "#",
                        new AddressSettings()
                                .setMaxDeliveryAttempts(MAX_DELIVERY_ATTEMPTS)
                                .setRedeliveryDelay(0)
                                .setDeadLetterAddress(SimpleString.of("DLQ"))
                                .setAutoCreateQueues(true)
                                .setAutoCreateAddresses(true))
                .addQueueConfiguration(QueueConfiguration.of("DLQ").setRoutingType(RoutingType.ANYCAST));
        configuration.setBrokerInstance(
                Files.createTempDirectory("sumi-catalogue-artemis-").toFile());
        EmbeddedActiveMQ server = new EmbeddedActiveMQ();
        server.setConfiguration(configuration);
        server.start();
        return server;
    }

    /**
     * No client-side buffering (consumerWindowSize=0): a message goes to a consumer that asks for
     * one, so the second copy of a message reaches the idle consumer, not the busy one's buffer.
     */
    @Bean
    ActiveMQConnectionFactory connectionFactory(EmbeddedActiveMQ artemis) {
        return new ActiveMQConnectionFactory("vm://" + SERVER_ID + "?consumerWindowSize=0");
    }
}
