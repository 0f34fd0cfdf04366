package io.sumi.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import io.sumi.outbox.OutboxDispatcher;
import io.sumi.outbox.OutboxPublisher;
import io.sumi.outbox.OutboxRecord;
import io.sumi.outbox.PublishResult;
import io.sumi.outbox.TopicRoutingPublisher;
import io.sumi.outbox.kafka.KafkaOutboxPublisher;
import io.sumi.outbox.rabbit.RabbitOutboxPublisher;
import io.sumi.testing.TestRabbit;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.springframework.amqp.core.BindingBuilder;
import org.springframework.amqp.core.FanoutExchange;
import org.springframework.amqp.core.Queue;
import org.springframework.amqp.rabbit.connection.CachingConnectionFactory;
import org.springframework.amqp.rabbit.core.RabbitAdmin;
import org.springframework.amqp.rabbit.core.RabbitTemplate;
import org.springframework.boot.amqp.autoconfigure.RabbitAutoConfiguration;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.kafka.autoconfigure.KafkaAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Which publisher the dispatcher gets with Spring AMQP on the class path: RabbitMQ alone, RabbitMQ
 * beside Kafka (per topic), turned off, or backing off for the application's own. No broker is
 * contacted (publishers connect on their first batch), except by the test of the outbox's own
 * connection factory, which publishes to the real RabbitMQ.
 */
class SumiOutboxRabbitAutoConfigurationTests {

    private static ApplicationContextRunner runner() {
        return H2Context.withTransactionManager("sumi_outbox_rabbit")
                .withPropertyValues(
                        "spring.kafka.bootstrap-servers=localhost:1", "sumi.outbox.dispatcher.enabled=false")
                .withConfiguration(AutoConfigurations.of(
                        KafkaAutoConfiguration.class,
                        RabbitAutoConfiguration.class,
                        SumiOutboxRabbitAutoConfiguration.class,
                        SumiOutboxAutoConfiguration.class));
    }

    @Test
    void withRabbitAloneEveryTopicGoesToRabbitAndTheDispatcherUsesIt() {
        runner().withClassLoader(new FilteredClassLoader("org.apache.kafka.clients.producer"))
                .withPropertyValues(
                        "sumi.outbox.dispatcher.enabled=true",
                        "sumi.outbox.dispatcher.min-poll-interval=1h",
                        "sumi.outbox.dispatcher.max-poll-interval=1h")
                .run(context -> {
                    assertThat(context).hasNotFailed().hasSingleBean(OutboxDispatcher.class);
                    assertThat(context).doesNotHaveBean(KafkaOutboxPublisher.class);
                    OutboxPublisher publisher = context.getBean(OutboxPublisher.class);
                    assertThat(publisher).isInstanceOf(TopicRoutingPublisher.class);
                    assertThat(((TopicRoutingPublisher) publisher).publisherOf("mail.send"))
                            .isInstanceOf(RabbitOutboxPublisher.class);
                });
    }

    @Test
    void besideKafkaTheListedTopicsGoToRabbitAndTheOthersToKafka() {
        runner().withPropertyValues("sumi.outbox.rabbit.topics=mail.send,mail.bounce")
                .run(context -> {
                    assertThat(context).hasNotFailed().hasSingleBean(KafkaOutboxPublisher.class);
                    TopicRoutingPublisher publisher = (TopicRoutingPublisher) context.getBean(OutboxPublisher.class);
                    assertThat(publisher.publisherOf("mail.send")).isInstanceOf(RabbitOutboxPublisher.class);
                    assertThat(publisher.publisherOf("mail.bounce")).isInstanceOf(RabbitOutboxPublisher.class);
                    assertThat(publisher.publisherOf("orders")).isInstanceOf(KafkaOutboxPublisher.class);
                });
    }

    @Test
    void besideKafkaWithoutListedTopicsKafkaKeepsThemAll() {
        runner().run(context -> {
            assertThat(context).hasNotFailed();
            TopicRoutingPublisher publisher = (TopicRoutingPublisher) context.getBean(OutboxPublisher.class);
            assertThat(publisher.publisherOf("orders")).isInstanceOf(KafkaOutboxPublisher.class);
        });
    }

    @Test
    void withTheRabbitPublisherOffKafkaIsTheOnlyPublisher() {
        runner().withPropertyValues("sumi.outbox.rabbit.enabled=false").run(context -> {
            assertThat(context).hasNotFailed().doesNotHaveBean(RabbitOutboxPublisher.class);
            assertThat(context.getBean(OutboxPublisher.class)).isInstanceOf(KafkaOutboxPublisher.class);
        });
    }

    @Test
    void theApplicationsOwnPublisherWins() {
        runner().withUserConfiguration(OwnPublisher.class).run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context)
                    .doesNotHaveBean(RabbitOutboxPublisher.class)
                    .doesNotHaveBean(KafkaOutboxPublisher.class);
            assertThat(context.getBean(OutboxPublisher.class)).isSameAs(context.getBean("own"));
        });
    }

    @Test
    void aRabbitSendTimeoutLongerThanTheDispatchersFailsStartUp() {
        runner().withPropertyValues("sumi.outbox.rabbit.send-timeout=1h")
                .run(context -> assertThat(context)
                        .hasFailed()
                        .getFailure()
                        .hasMessageContaining("sumi.outbox.rabbit.send-timeout"));
    }

    /**
     * The outbox's own connection factory (the application's has no publisher confirms) is made
     * from {@code spring.rabbitmq.*} as Boot makes the application's: with addresses whose first
     * one refuses connections, it connects to the next one. Negative control: a factory made from
     * the RabbitMQ client settings alone (as before) knows only the first address and cannot
     * publish. Real RabbitMQ.
     */
    @Test
    void theOutboxsOwnConnectionFactoryUsesEveryAddressOfSpringRabbitmqAddresses() {
        TestRabbit.requireBroker();
        String exchange = "sumi-outbox-addresses-" + UUID.randomUUID();
        runner().withClassLoader(new FilteredClassLoader("org.apache.kafka.clients.producer"))
                .withPropertyValues(
                        "spring.rabbitmq.addresses=127.0.0.1:1," + TestRabbit.HOST + ":" + TestRabbit.PORT,
                        "spring.rabbitmq.username=guest",
                        "spring.rabbitmq.password=guest")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    CachingConnectionFactory application = context.getBean(CachingConnectionFactory.class);
                    RabbitAdmin admin = new RabbitAdmin(application);
                    FanoutExchange fanout = new FanoutExchange(exchange, false, false);
                    Queue queue = new Queue(exchange, false, false, false);
                    admin.declareExchange(fanout);
                    admin.declareQueue(queue);
                    admin.declareBinding(BindingBuilder.bind(queue).to(fanout));
                    try {
                        RabbitOutboxPublisher publisher = context.getBean(RabbitOutboxPublisher.class);
                        assertThat(publisher
                                        .publish(List.of(record(1, exchange)))
                                        .failures())
                                .isEmpty();
                        assertThat(new RabbitTemplate(application).receive(exchange, 10_000))
                                .isNotNull();

                        try (RabbitOutboxPublisher clientSettingsOnly = RabbitOutboxPublisher.create(
                                application.getRabbitConnectionFactory(),
                                RabbitOutboxPublisher.routes(Map.of()),
                                Duration.ofSeconds(5),
                                RabbitOutboxPublisher.DEFAULT_CONTENT_TYPE)) {
                            assertThat(clientSettingsOnly
                                            .publish(List.of(record(2, exchange)))
                                            .failures())
                                    .containsOnlyKeys(2L);
                        }
                    } finally {
                        admin.deleteQueue(exchange);
                        admin.deleteExchange(exchange);
                    }
                });
    }

    static OutboxRecord record(long id, String topic) {
        return new OutboxRecord(
                id, "agg-" + id, topic, "p" + id, Map.of(), Instant.now(), Instant.EPOCH, null, 0, null, null, null);
    }

    @Configuration(proxyBeanMethods = false)
    static class OwnPublisher {

        @Bean
        OutboxPublisher own() {
            return records -> PublishResult.allSent();
        }
    }
}
