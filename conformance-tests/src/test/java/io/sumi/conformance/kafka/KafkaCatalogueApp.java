package io.sumi.conformance.kafka;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sumi.budget.BudgetRegistry;
import io.sumi.conformance.BudgetWindow;
import io.sumi.conformance.LedgerFaults;
import io.sumi.conformance.Work;
import io.sumi.kafka.SumiKafkaErrorHandling;
import java.time.Duration;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.kafka.autoconfigure.ConcurrentKafkaListenerContainerFactoryConfigurer;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.config.ConcurrentKafkaListenerContainerFactory;
import org.springframework.kafka.core.ConsumerFactory;
import org.springframework.kafka.core.KafkaOperations;
import org.springframework.kafka.listener.ContainerProperties.AckMode;
import org.springframework.kafka.listener.DeadLetterPublishingRecoverer;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.util.backoff.FixedBackOff;

/**
 * The Kafka application of the catalogue, wired as docs/kafka.md's set-up says: Spring Boot, the
 * starter, a {@code DefaultErrorHandler} with a dead-letter recoverer (retries: 5 × 100 ms) as the
 * application's error handler, and a few container factories of its own: batch, without retries
 * ({@link SumiKafkaErrorHandling#withoutRetries}), MANUAL acknowledgement.
 */
// proxyBeanMethods = false: the batch factories build their own factory, never mutate the record one.
@SpringBootConfiguration(proxyBeanMethods = false)
@EnableAutoConfiguration(
        excludeName = {
            "org.springframework.boot.amqp.autoconfigure.RabbitAutoConfiguration",
            "org.springframework.boot.amqp.autoconfigure.health.RabbitHealthContributorAutoConfiguration",
            "org.springframework.boot.amqp.autoconfigure.metrics.RabbitMetricsAutoConfiguration",
            "org.springframework.boot.artemis.autoconfigure.ArtemisAutoConfiguration",
            "org.springframework.boot.jms.autoconfigure.JmsAutoConfiguration",
            "org.springframework.boot.jms.autoconfigure.health.JmsHealthContributorAutoConfiguration"
        })
@Import({KafkaRecordListeners.class, KafkaBatchListeners.class, KafkaTransactionalListeners.class, LedgerFaults.class})
public class KafkaCatalogueApp {

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
        return window.registry(meters, "kafka-record-budget", "kafka-batch-budget");
    }

    @Bean
    DeadLetterPublishingRecoverer recoverer(KafkaOperations<?, ?> template) {
        return new DeadLetterPublishingRecoverer(
                template,
                (ConsumerRecord<?, ?> record, Exception ex) ->
                        new TopicPartition(record.topic() + "-dlt", record.partition()));
    }

    @Bean
    DefaultErrorHandler errorHandler(DeadLetterPublishingRecoverer recoverer) {
        return new DefaultErrorHandler(recoverer, new FixedBackOff(100, 5));
    }

    @Bean
    ConcurrentKafkaListenerContainerFactory<Object, Object> batchFactory(
            ConcurrentKafkaListenerContainerFactoryConfigurer configurer, ConsumerFactory<Object, Object> consumers) {
        ConcurrentKafkaListenerContainerFactory<Object, Object> factory = factory(configurer, consumers);
        factory.setBatchListener(true);
        return factory;
    }

    @Bean
    ConcurrentKafkaListenerContainerFactory<Object, Object> noRetryFactory(
            ConcurrentKafkaListenerContainerFactoryConfigurer configurer,
            ConsumerFactory<Object, Object> consumers,
            DeadLetterPublishingRecoverer recoverer) {
        ConcurrentKafkaListenerContainerFactory<Object, Object> factory = factory(configurer, consumers);
        factory.setCommonErrorHandler(SumiKafkaErrorHandling.withoutRetries(recoverer, Duration.ofSeconds(1)));
        return factory;
    }

    @Bean
    ConcurrentKafkaListenerContainerFactory<Object, Object> noRetryBatchFactory(
            ConcurrentKafkaListenerContainerFactoryConfigurer configurer,
            ConsumerFactory<Object, Object> consumers,
            DeadLetterPublishingRecoverer recoverer) {
        ConcurrentKafkaListenerContainerFactory<Object, Object> factory =
                noRetryFactory(configurer, consumers, recoverer);
        factory.setBatchListener(true);
        return factory;
    }

    @Bean
    ConcurrentKafkaListenerContainerFactory<Object, Object> manualFactory(
            ConcurrentKafkaListenerContainerFactoryConfigurer configurer, ConsumerFactory<Object, Object> consumers) {
        ConcurrentKafkaListenerContainerFactory<Object, Object> factory = factory(configurer, consumers);
        factory.getContainerProperties().setAckMode(AckMode.MANUAL);
        return factory;
    }

    @Bean
    ConcurrentKafkaListenerContainerFactory<Object, Object> manualBatchFactory(
            ConcurrentKafkaListenerContainerFactoryConfigurer configurer, ConsumerFactory<Object, Object> consumers) {
        ConcurrentKafkaListenerContainerFactory<Object, Object> factory = factory(configurer, consumers);
        factory.getContainerProperties().setAckMode(AckMode.MANUAL);
        factory.setBatchListener(true);
        return factory;
    }

    private static ConcurrentKafkaListenerContainerFactory<Object, Object> factory(
            ConcurrentKafkaListenerContainerFactoryConfigurer configurer, ConsumerFactory<Object, Object> consumers) {
        ConcurrentKafkaListenerContainerFactory<Object, Object> factory =
                new ConcurrentKafkaListenerContainerFactory<>();
        configurer.configure(factory, consumers);
        return factory;
    }
}
