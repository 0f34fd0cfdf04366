package io.sumi.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentHandler;
import io.sumi.rabbit.SumiRabbitContainerAdvice;
import io.sumi.testing.TestDatabase;
import io.sumi.testing.TestRabbit;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.Queue;
import org.springframework.amqp.core.QueueBuilder;
import org.springframework.amqp.rabbit.annotation.RabbitListener;
import org.springframework.amqp.rabbit.config.SimpleRabbitListenerContainerFactory;
import org.springframework.amqp.rabbit.connection.ConnectionFactory;
import org.springframework.amqp.rabbit.listener.SimpleMessageListenerContainer;
import org.springframework.amqp.rabbit.listener.adapter.BatchMessagingMessageListenerAdapter;
import org.springframework.amqp.rabbit.listener.adapter.HandlerAdapter;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.config.ConcurrentKafkaListenerContainerFactory;
import org.springframework.kafka.core.ConsumerFactory;
import org.springframework.messaging.handler.invocation.InvocableHandlerMethod;

/**
 * Issue 19, A2: an asynchronous {@code @IdempotentHandler} batch listener (a batch
 * {@code @KafkaListener}, a consumer-batch {@code @RabbitListener}, a service method a batch
 * listener hands its batch, a hand-built batch container carrying Sumi's advice) is refused at
 * start-up, naming the listener and the fix. Before, the context started and every batch was
 * refused when delivered: on Kafka the refusal was retried and dead-lettered (the messages lost
 * to the DLT for a configuration mistake), on a MANUAL Rabbit container the batch stayed
 * unacknowledged. Real contexts: the embedded Kafka, the local RabbitMQ and PostgreSQL.
 */
class AsyncBatchListenerStartUpTests {

    static final String QUEUE =
            "sumi-async-batch-startup-" + UUID.randomUUID().toString().substring(0, 8);

    @Test
    void aKafkaListenerOnABatchContainerFactoryReturningACompletableFutureIsRefusedAtStartUp() {
        assertThat(refusal(KafkaBatchFactoryApp.class))
                .contains(
                        "KafkaBatchFactoryListener.onBatch",
                        "the batch Kafka listener container 'async-batch-factory'",
                        "Return void and wait for the work inside the method");
    }

    @Test
    void aServiceMethodTakingABatchOfRecordsReturningACompletableFutureIsRefusedAtStartUp() {
        assertThat(refusal(KafkaBatchServiceApp.class))
                .contains("BatchService.handle", "runs as a batch listener", "Return void");
    }

    @Test
    void aConsumerBatchRabbitListenerReturningACompletableFutureIsRefusedAtStartUp() {
        assertThat(refusal(RabbitBatchFactoryApp.class))
                .contains(
                        "RabbitBatchListener.onBatch",
                        "the consumer-batch RabbitMQ listener container 'rabbit-async-batch'",
                        "Return void and wait for the work inside the method");
    }

    @Test
    void aHandBuiltConsumerBatchContainerWithSumisAdviceAndAnAsyncListenerIsRefusedAtStartUp() {
        assertThat(refusal(RabbitHandBuiltApp.class))
                .contains("HandBuiltBatchListener.onBatch", "runs as a batch listener", "Return void");
    }

    /** The message of Sumi's start-up refusal of {@code app}; fails if {@code app} starts. */
    static String refusal(Class<?> app) {
        String[] database = TestDatabase.POSTGRESQL.settings();
        Throwable failure = null;
        try (ConfigurableApplicationContext context = new SpringApplicationBuilder(app)
                .web(WebApplicationType.NONE)
                .properties(
                        "spring.datasource.url=" + database[0],
                        "spring.datasource.username=" + database[1],
                        "spring.datasource.password=" + database[2],
                        "spring.flyway.locations=classpath:db/sumi/{vendor}",
                        "spring.rabbitmq.host=" + TestRabbit.HOST,
                        "spring.rabbitmq.port=" + TestRabbit.PORT,
                        "test.queue=" + QUEUE,
                        "spring.main.register-shutdown-hook=false")
                .run()) {
            fail("An asynchronous @IdempotentHandler batch listener started (" + app.getSimpleName() + ")");
        } catch (RuntimeException ex) {
            failure = ex;
        }
        Throwable refused = failure;
        List<String> messages = new ArrayList<>();
        for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
            if (cause instanceof IllegalStateException && cause.getMessage() != null) {
                messages.add(cause.getMessage());
            }
        }
        return messages.stream()
                .filter(message -> message.contains("runs as a batch listener"))
                .findFirst()
                .orElseThrow(() ->
                        new AssertionError("No refusal of an asynchronous batch listener in " + messages, refused));
    }

    /** Kafka only: the Rabbit and JMS auto-configurations stay out. */
    @SpringBootConfiguration(proxyBeanMethods = false)
    @EnableAutoConfiguration(
            excludeName = {
                "org.springframework.boot.amqp.autoconfigure.RabbitAutoConfiguration",
                "org.springframework.boot.artemis.autoconfigure.ArtemisAutoConfiguration",
                "org.springframework.boot.jms.autoconfigure.JmsAutoConfiguration",
                "org.springframework.boot.jms.autoconfigure.health.JmsHealthContributorAutoConfiguration"
            })
    static class KafkaApp {

        /** A batch factory: the listener method does not show that it runs as a batch listener. */
        @Bean
        ConcurrentKafkaListenerContainerFactory<Object, Object> batchFactory(
                ConsumerFactory<Object, Object> consumers) {
            ConcurrentKafkaListenerContainerFactory<Object, Object> factory =
                    new ConcurrentKafkaListenerContainerFactory<>();
            factory.setConsumerFactory(consumers);
            factory.setBatchListener(true);
            return factory;
        }
    }

    static class KafkaBatchFactoryApp extends KafkaApp {
        @Bean
        KafkaBatchFactoryListener kafkaBatchFactoryListener() {
            return new KafkaBatchFactoryListener();
        }
    }

    static class KafkaBatchFactoryListener {
        @KafkaListener(id = "async-batch-factory", topics = "async.batch.factory", containerFactory = "batchFactory")
        @IdempotentHandler(consumer = "async-batch-factory", mode = IdempotencyMode.LEASE)
        public CompletableFuture<Void> onBatch(List<String> payloads) {
            return CompletableFuture.completedFuture(null);
        }
    }

    static class KafkaBatchServiceApp extends KafkaApp {
        @Bean
        BatchService batchService() {
            return new BatchService();
        }

        @Bean
        KafkaBatchCaller kafkaBatchCaller(BatchService service) {
            return new KafkaBatchCaller(service);
        }
    }

    /** The batch listener is not annotated: it hands its batch to the guarded service. */
    static class KafkaBatchCaller {
        private final BatchService service;

        KafkaBatchCaller(BatchService service) {
            this.service = service;
        }

        @KafkaListener(id = "async-batch-service", topics = "async.batch.service", containerFactory = "batchFactory")
        public void onBatch(List<ConsumerRecord<String, String>> records) {
            service.handle(records).join();
        }
    }

    static class BatchService {
        @IdempotentHandler(consumer = "async-batch-service", mode = IdempotencyMode.LEASE)
        public CompletableFuture<Void> handle(List<ConsumerRecord<String, String>> records) {
            return CompletableFuture.completedFuture(null);
        }
    }

    /** Rabbit only: the Kafka and JMS auto-configurations stay out. */
    @SpringBootConfiguration(proxyBeanMethods = false)
    @EnableAutoConfiguration(
            excludeName = {
                "org.springframework.boot.kafka.autoconfigure.KafkaAutoConfiguration",
                "org.springframework.boot.kafka.autoconfigure.metrics.KafkaMetricsAutoConfiguration",
                "org.springframework.boot.artemis.autoconfigure.ArtemisAutoConfiguration",
                "org.springframework.boot.jms.autoconfigure.JmsAutoConfiguration",
                "org.springframework.boot.jms.autoconfigure.health.JmsHealthContributorAutoConfiguration"
            })
    static class RabbitApp {
        @Bean
        Queue asyncBatchQueue() {
            return QueueBuilder.nonDurable(QUEUE).autoDelete().build();
        }
    }

    static class RabbitBatchFactoryApp extends RabbitApp {
        /** A consumer-batch factory: the listener method (payloads) does not show it. */
        @Bean
        SimpleRabbitListenerContainerFactory batchFactory(ConnectionFactory connectionFactory) {
            SimpleRabbitListenerContainerFactory factory = new SimpleRabbitListenerContainerFactory();
            factory.setConnectionFactory(connectionFactory);
            factory.setBatchListener(true);
            factory.setConsumerBatchEnabled(true);
            factory.setBatchSize(2);
            return factory;
        }

        @Bean
        RabbitBatchListener rabbitBatchListener() {
            return new RabbitBatchListener();
        }
    }

    static class RabbitBatchListener {
        @RabbitListener(id = "rabbit-async-batch", queues = "${test.queue}", containerFactory = "batchFactory")
        @IdempotentHandler(consumer = "rabbit-async-batch", mode = IdempotencyMode.LEASE)
        public CompletableFuture<Void> onBatch(List<String> payloads) {
            return CompletableFuture.completedFuture(null);
        }
    }

    static class RabbitHandBuiltApp extends RabbitApp {
        @Bean
        HandBuiltBatchListener handBuiltBatchListener() {
            return new HandBuiltBatchListener();
        }

        /** Built by hand, Sumi's advice put on it before its listener is set. */
        @Bean
        SimpleMessageListenerContainer handBuiltContainer(
                ConnectionFactory connectionFactory, HandBuiltBatchListener listener) throws Exception {
            SimpleMessageListenerContainer container = new SimpleMessageListenerContainer(connectionFactory);
            container.setQueueNames(QUEUE);
            container.setListenerId("rabbit-hand-built-batch");
            container.setConsumerBatchEnabled(true);
            container.setBatchSize(2);
            container.setAdviceChain(SumiRabbitContainerAdvice.wrap(container, null, Duration.ofMillis(100), null));
            Method method = HandBuiltBatchListener.class.getMethod("onBatch", List.class);
            BatchMessagingMessageListenerAdapter adapter =
                    new BatchMessagingMessageListenerAdapter(listener, method, false, null, null);
            adapter.setHandlerAdapter(new HandlerAdapter(new InvocableHandlerMethod(listener, method)));
            container.setMessageListener(adapter);
            return container;
        }
    }

    static class HandBuiltBatchListener {
        @IdempotentHandler(consumer = "rabbit-hand-built-batch", mode = IdempotencyMode.LEASE)
        public CompletableFuture<Void> onBatch(List<Message> messages) {
            return CompletableFuture.completedFuture(null);
        }
    }
}
