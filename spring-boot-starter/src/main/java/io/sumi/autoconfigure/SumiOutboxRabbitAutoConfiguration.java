package io.sumi.autoconfigure;

import io.sumi.outbox.OutboxPublisher;
import io.sumi.outbox.TopicRoutingPublisher;
import io.sumi.outbox.rabbit.RabbitDestination;
import io.sumi.outbox.rabbit.RabbitOutboxPublisher;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;
import org.springframework.amqp.rabbit.connection.CachingConnectionFactory;
import org.springframework.amqp.rabbit.connection.ConnectionFactory;
import org.springframework.amqp.rabbit.connection.RabbitConnectionFactoryBean;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.boot.amqp.autoconfigure.CachingConnectionFactoryConfigurer;
import org.springframework.boot.amqp.autoconfigure.RabbitConnectionFactoryBeanConfigurer;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Primary;
import org.springframework.util.ClassUtils;

/**
 * The outbox publishes to RabbitMQ: a {@link RabbitOutboxPublisher} for the topics
 * {@code sumi.outbox.rabbit.topics} names (when it names none: every topic, unless a Kafka
 * publisher exists, which then keeps them all), and, as the
 * dispatcher's publisher, a {@link TopicRoutingPublisher} that sends the other topics to the Kafka
 * publisher when there is one. Runs before the outbox auto-configuration, whose dispatcher then
 * finds this publisher; the Kafka publisher is still created beside it.
 */
@AutoConfiguration(
        before = SumiOutboxAutoConfiguration.class,
        after = SumiAutoConfiguration.class,
        afterName = "org.springframework.boot.amqp.autoconfigure.RabbitAutoConfiguration")
@ConditionalOnClass({RabbitOutboxPublisher.class, CachingConnectionFactory.class})
@ConditionalOnBean(ConnectionFactory.class)
@ConditionalOnProperty(prefix = "sumi.outbox", name = "enabled", havingValue = "true", matchIfMissing = true)
@ConditionalOnProperty(prefix = "sumi.outbox.rabbit", name = "enabled", havingValue = "true", matchIfMissing = true)
@EnableConfigurationProperties({SumiOutboxRabbitProperties.class, SumiOutboxProperties.class})
public class SumiOutboxRabbitAutoConfiguration {

    static final String RABBIT_PUBLISHER = "sumiRabbitOutboxPublisher";
    static final String ROUTING_PUBLISHER = "sumiOutboxPublisher";

    /**
     * On the application's connection factory when it has correlated confirms and returns on;
     * otherwise on a connection factory of its own. When Spring Boot made the application's (from
     * {@code spring.rabbitmq.*}), the outbox's is made the same way, by Boot's own configurers: the
     * same addresses (all of {@code spring.rabbitmq.addresses}, in Boot's shuffle mode), virtual
     * host, credentials, TLS (SSL bundle) and timeouts. For an application's own
     * {@code CachingConnectionFactory} it is made from that factory's RabbitMQ client settings
     * (host, port, credentials, virtual host, TLS: addresses set on the Spring factory are not
     * visible there).
     */
    @Bean(RABBIT_PUBLISHER)
    @ConditionalOnMissingBean(OutboxPublisher.class)
    RabbitOutboxPublisher sumiRabbitOutboxPublisher(
            ConnectionFactory connectionFactory,
            SumiOutboxRabbitProperties rabbit,
            SumiOutboxProperties outbox,
            ListableBeanFactory beans)
            throws Exception {
        Duration dispatcherTimeout = outbox.dispatcher().sendTimeout();
        Duration sendTimeout = rabbit.sendTimeout() != null ? rabbit.sendTimeout() : dispatcherTimeout;
        if (sendTimeout.compareTo(dispatcherTimeout) > 0) {
            throw new IllegalStateException("sumi.outbox.rabbit.send-timeout (" + sendTimeout + ") must not exceed"
                    + " sumi.outbox.dispatcher.send-timeout (" + dispatcherTimeout
                    + "): the dispatcher cuts every batch at"
                    + " its own send timeout. Leave sumi.outbox.rabbit.send-timeout unset to use the dispatcher's.");
        }
        Map<String, RabbitDestination> routes = new LinkedHashMap<>();
        rabbit.routes()
                .forEach((topic, route) ->
                        routes.put(topic, new RabbitDestination(route.exchange(), route.routingKey())));
        if (connectionFactory.isPublisherConfirms() && connectionFactory.isPublisherReturns()) {
            return RabbitOutboxPublisher.create(
                    connectionFactory, RabbitOutboxPublisher.routes(routes), sendTimeout, rabbit.contentType());
        }
        CachingConnectionFactory bootConfigured =
                ClassUtils.isPresent(BOOT_CONFIGURER, SumiOutboxRabbitAutoConfiguration.class.getClassLoader())
                        ? BootConfigured.connectionFactory(beans)
                        : null;
        if (bootConfigured != null) {
            return RabbitOutboxPublisher.createOwning(
                    bootConfigured, RabbitOutboxPublisher.routes(routes), sendTimeout, rabbit.contentType());
        }
        if (!(connectionFactory instanceof CachingConnectionFactory caching)) {
            throw new IllegalStateException(
                    "The outbox's RabbitMQ publisher needs publisher confirms (correlated) and returns"
                            + " on the ConnectionFactory bean "
                            + connectionFactory.getClass().getName()
                            + ", or a CachingConnectionFactory to make a connection factory of its own from");
        }
        return RabbitOutboxPublisher.create(
                caching.getRabbitConnectionFactory(),
                RabbitOutboxPublisher.routes(routes),
                sendTimeout,
                rabbit.contentType());
    }

    private static final String BOOT_CONFIGURER =
            "org.springframework.boot.amqp.autoconfigure.RabbitConnectionFactoryBeanConfigurer";

    /** Spring Boot's RabbitMQ configurers; loaded only when spring-boot-amqp is on the class path. */
    private static final class BootConfigured {

        /**
         * A connection factory made as Spring Boot makes the application's (RabbitAutoConfiguration),
         * or {@code null} when Boot did not make it (the application has its own).
         */
        static @Nullable CachingConnectionFactory connectionFactory(ListableBeanFactory beans) throws Exception {
            RabbitConnectionFactoryBeanConfigurer clientSettings = beans.getBeanProvider(
                            RabbitConnectionFactoryBeanConfigurer.class)
                    .getIfAvailable();
            CachingConnectionFactoryConfigurer factorySettings = beans.getBeanProvider(
                            CachingConnectionFactoryConfigurer.class)
                    .getIfAvailable();
            if (clientSettings == null || factorySettings == null) {
                return null;
            }
            RabbitConnectionFactoryBean client = new RabbitConnectionFactoryBean();
            clientSettings.configure(client);
            client.afterPropertiesSet();
            CachingConnectionFactory factory = new CachingConnectionFactory(Objects.requireNonNull(client.getObject()));
            factorySettings.configure(factory);
            return factory;
        }
    }

    /**
     * The dispatcher's publisher: the RabbitMQ publisher for its topics, any other publisher bean
     * (the Kafka publisher) for the rest.
     */
    @Bean(ROUTING_PUBLISHER)
    @Primary
    @ConditionalOnBean(name = RABBIT_PUBLISHER)
    TopicRoutingPublisher sumiOutboxPublisher(
            // By name and interface: a post-processor may have wrapped the publisher (metrics, tracing, a demo's
            // copies).
            @Qualifier(RABBIT_PUBLISHER) OutboxPublisher rabbitPublisher,
            SumiOutboxRabbitProperties rabbit,
            ListableBeanFactory beans) {
        OutboxPublisher other = otherPublisher(beans);
        if (rabbit.topics().isEmpty()) {
            // Nothing listed: every topic to RabbitMQ, unless a Kafka publisher is there (which keeps them all).
            return TopicRoutingPublisher.of(Map.of(), other != null ? other : rabbitPublisher);
        }
        Map<String, OutboxPublisher> byTopic = new LinkedHashMap<>();
        rabbit.topics().forEach(topic -> byTopic.put(topic, rabbitPublisher));
        return TopicRoutingPublisher.of(byTopic, other);
    }

    private static @Nullable OutboxPublisher otherPublisher(ListableBeanFactory beans) {
        for (String name : beans.getBeanNamesForType(OutboxPublisher.class, false, false)) {
            if (!name.equals(RABBIT_PUBLISHER) && !name.equals(ROUTING_PUBLISHER)) {
                return beans.getBean(name, OutboxPublisher.class);
            }
        }
        return null;
    }
}
