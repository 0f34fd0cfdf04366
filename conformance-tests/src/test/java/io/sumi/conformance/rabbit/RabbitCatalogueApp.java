package io.sumi.conformance.rabbit;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sumi.budget.BudgetRegistry;
import io.sumi.conformance.BudgetWindow;
import io.sumi.conformance.LedgerFaults;
import io.sumi.conformance.Role;
import io.sumi.conformance.Work;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.springframework.amqp.core.AcknowledgeMode;
import org.springframework.amqp.core.Binding;
import org.springframework.amqp.core.Declarable;
import org.springframework.amqp.core.Declarables;
import org.springframework.amqp.core.DirectExchange;
import org.springframework.amqp.core.Queue;
import org.springframework.amqp.core.QueueBuilder;
import org.springframework.amqp.rabbit.config.SimpleRabbitListenerContainerFactory;
import org.springframework.amqp.rabbit.connection.ConnectionFactory;
import org.springframework.amqp.rabbit.core.RabbitAdmin;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.amqp.autoconfigure.SimpleRabbitListenerContainerFactoryConfigurer;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;

/**
 * The RabbitMQ application of the catalogue: Spring Boot, the starter, the shared broker. Queues are
 * named per JVM run ({@code catalogue.run}) and deleted with the context; every queue dead-letters
 * to one queue read back into {@link Work}. The {@code held} and {@code ledger-down} queues are
 * quorum queues with {@code x-delivery-limit} 3 (a ledger outage must not spend a message's
 * redelivery budget either); the others classic. Container factories: the default (prefetch 1,
 * requeue on failure), a consumer-batch one, channel-transacted ones with the JDBC transaction
 * manager, MANUAL acknowledgement.
 */
// proxyBeanMethods = false: the batch factories build their own factory, never mutate the record one.
@SpringBootConfiguration(proxyBeanMethods = false)
@EnableAutoConfiguration(
        excludeName = {
            "org.springframework.boot.kafka.autoconfigure.KafkaAutoConfiguration",
            "org.springframework.boot.kafka.autoconfigure.metrics.KafkaMetricsAutoConfiguration",
            "org.springframework.boot.artemis.autoconfigure.ArtemisAutoConfiguration",
            "org.springframework.boot.jms.autoconfigure.JmsAutoConfiguration",
            "org.springframework.boot.jms.autoconfigure.health.JmsHealthContributorAutoConfiguration"
        })
@Import({RabbitRecordListeners.class, RabbitBatchListeners.class, LedgerFaults.class})
public class RabbitCatalogueApp {

    static final String[] SHAPES = {"record", "batch"};

    /** The queue of {@code role}'s listener of {@code shape} ({@code lane} 1: a batch kind's second consumer). */
    static String queue(String shape, Role role, int lane, String run) {
        return "cat." + shape + "." + role.slug() + (lane == 0 ? "" : ".lane" + lane) + "." + run;
    }

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

    /** The budget-bound listeners' budgets, on the window's clock (the starter's registry backs off). */
    @Bean
    BudgetRegistry budgetRegistry(BudgetWindow window, SimpleMeterRegistry meters) {
        return window.registry(meters, "rabbit-record-budget", "rabbit-batch-budget");
    }

    @Bean
    Declarables catalogueQueues(@Value("${catalogue.run}") String run) {
        List<Declarable> declarables = new ArrayList<>();
        DirectExchange dlx = new DirectExchange("cat.dlx." + run, false, true);
        Queue dlq = QueueBuilder.nonDurable("cat.dlq." + run).build();
        declarables.add(dlx);
        declarables.add(dlq);
        declarables.add(new Binding(dlq.getName(), Binding.DestinationType.QUEUE, dlx.getName(), "dlq", Map.of()));
        for (String shape : SHAPES) {
            for (Role role : Role.values()) {
                for (int lane = 0; lane < 2; lane++) {
                    QueueBuilder builder = role == Role.HELD || role == Role.PLAIN_HELD || role == Role.LEDGER_DOWN
                            ? QueueBuilder.durable(queue(shape, role, lane, run))
                                    .quorum()
                                    .deliveryLimit(3)
                            : QueueBuilder.nonDurable(queue(shape, role, lane, run));
                    declarables.add(builder.deadLetterExchange(dlx.getName())
                            .deadLetterRoutingKey("dlq")
                            .build());
                }
            }
        }
        return new Declarables(declarables);
    }

    /** Deletes this run's queues when the context closes (quorum queues are durable). */
    @Bean
    DisposableBean queueCleaner(RabbitAdmin admin, Declarables catalogueQueues) {
        return () -> {
            for (Queue queue : catalogueQueues.getDeclarablesByType(Queue.class)) {
                admin.deleteQueue(queue.getName());
            }
        };
    }

    @Bean
    RabbitAdmin rabbitAdmin(ConnectionFactory connections) {
        return new RabbitAdmin(connections);
    }

    @Bean
    DataSourceTransactionManager transactionManager(DataSource dataSource) {
        return new DataSourceTransactionManager(dataSource);
    }

    @Bean
    SimpleRabbitListenerContainerFactory batchFactory(
            SimpleRabbitListenerContainerFactoryConfigurer configurer, ConnectionFactory connections) {
        SimpleRabbitListenerContainerFactory factory = factory(configurer, connections);
        batch(factory);
        return factory;
    }

    @Bean
    SimpleRabbitListenerContainerFactory txFactory(
            SimpleRabbitListenerContainerFactoryConfigurer configurer,
            ConnectionFactory connections,
            DataSourceTransactionManager transactions) {
        SimpleRabbitListenerContainerFactory factory = factory(configurer, connections);
        factory.setChannelTransacted(true);
        factory.setTransactionManager(transactions);
        return factory;
    }

    @Bean
    SimpleRabbitListenerContainerFactory txBatchFactory(
            SimpleRabbitListenerContainerFactoryConfigurer configurer,
            ConnectionFactory connections,
            DataSourceTransactionManager transactions) {
        SimpleRabbitListenerContainerFactory factory = factory(configurer, connections);
        factory.setChannelTransacted(true);
        factory.setTransactionManager(transactions);
        batch(factory);
        return factory;
    }

    @Bean
    SimpleRabbitListenerContainerFactory manualFactory(
            SimpleRabbitListenerContainerFactoryConfigurer configurer, ConnectionFactory connections) {
        SimpleRabbitListenerContainerFactory factory = factory(configurer, connections);
        factory.setAcknowledgeMode(AcknowledgeMode.MANUAL);
        return factory;
    }

    @Bean
    SimpleRabbitListenerContainerFactory manualPrefetch2Factory(
            SimpleRabbitListenerContainerFactoryConfigurer configurer, ConnectionFactory connections) {
        SimpleRabbitListenerContainerFactory factory = factory(configurer, connections);
        factory.setAcknowledgeMode(AcknowledgeMode.MANUAL);
        factory.setPrefetchCount(2);
        return factory;
    }

    @Bean
    SimpleRabbitListenerContainerFactory manualBatchFactory(
            SimpleRabbitListenerContainerFactoryConfigurer configurer, ConnectionFactory connections) {
        SimpleRabbitListenerContainerFactory factory = factory(configurer, connections);
        factory.setAcknowledgeMode(AcknowledgeMode.MANUAL);
        batch(factory);
        return factory;
    }

    private static SimpleRabbitListenerContainerFactory factory(
            SimpleRabbitListenerContainerFactoryConfigurer configurer, ConnectionFactory connections) {
        SimpleRabbitListenerContainerFactory factory = new SimpleRabbitListenerContainerFactory();
        configurer.configure(factory, connections);
        return factory;
    }

    private static void batch(SimpleRabbitListenerContainerFactory factory) {
        factory.setBatchListener(true);
        factory.setConsumerBatchEnabled(true);
        factory.setBatchSize(10);
        factory.setPrefetchCount(10);
        factory.setReceiveTimeout(500L);
    }
}
