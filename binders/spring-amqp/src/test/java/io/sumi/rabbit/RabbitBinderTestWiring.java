package io.sumi.rabbit;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sumi.consumer.HandlerDefaults;
import io.sumi.consumer.IdempotentExecutor;
import io.sumi.store.ProcessedMessageStore;
import io.sumi.store.jdbc.JdbcProcessedMessageStore;
import io.sumi.testing.BusyClaimLatches;
import io.sumi.testing.TestDatabase;
import io.sumi.testing.TestRabbit;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.springframework.amqp.rabbit.connection.CachingConnectionFactory;
import org.springframework.amqp.rabbit.connection.ConnectionFactory;
import org.springframework.amqp.rabbit.core.RabbitAdmin;
import org.springframework.amqp.rabbit.listener.RabbitListenerEndpointRegistry;
import org.springframework.aop.framework.autoproxy.DefaultAdvisorAutoProxyCreator;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;
import org.springframework.core.env.MapPropertySource;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * What the binder's Spring tests wire alike, as the starter would: Sumi's advisor on
 * {@code @IdempotentHandler} methods (class-based proxies), the local PostgreSQL as the ledger,
 * and a meter registry. Each test adds its executor, container factories and listeners; the
 * broker side they share is {@link Broker} (imported by the tests that want it), and a context's
 * life, named after the run's prefix, is {@link #context} and {@link #cleanUp}.
 */
@Configuration(proxyBeanMethods = false)
class RabbitBinderTestWiring {

    @Bean
    static DefaultAdvisorAutoProxyCreator autoProxyCreator() {
        DefaultAdvisorAutoProxyCreator creator = new DefaultAdvisorAutoProxyCreator();
        creator.setProxyTargetClass(true);
        return creator;
    }

    @Bean
    static IdempotentRabbitHandlerAdvisor sumiAdvisor(ObjectProvider<IdempotentExecutor> executor) {
        return new IdempotentRabbitHandlerAdvisor(
                new IdempotentRabbitHandlerInterceptor(executor::getObject, HandlerDefaults::standard));
    }

    /** The shared test pool: not closed with the context. */
    @Bean(destroyMethod = "")
    DataSource dataSource() {
        return TestDatabase.POSTGRESQL.dataSource();
    }

    @Bean
    ProcessedMessageStore store(DataSource dataSource) {
        // Tells concurrent-duplicates listeners when a copy of their message met them (see BusyClaimLatches).
        return new BusyClaimLatches(
                JdbcProcessedMessageStore.builder(dataSource).build());
    }

    @Bean
    SimpleMeterRegistry meters() {
        return new SimpleMeterRegistry();
    }

    /** The property that names a run's queues, exchanges and the listeners' connection. */
    static final String PREFIX_PROPERTY = "it.prefix";

    /**
     * The listeners' connection to the local RabbitMQ, named {@link #connectionName} (so that a
     * test can cut it on the broker), and the admin that declares the test's queues.
     */
    @Configuration(proxyBeanMethods = false)
    static class Broker {

        @Bean
        CachingConnectionFactory connectionFactory(Environment environment) {
            return TestRabbit.connectionFactory(connectionName(environment.getRequiredProperty(PREFIX_PROPERTY)));
        }

        @Bean
        RabbitAdmin rabbitAdmin(ConnectionFactory connectionFactory) {
            return new RabbitAdmin(connectionFactory);
        }
    }

    /** The name the listeners' connection of the run named {@code prefix} gives the broker. */
    static String connectionName(String prefix) {
        return prefix + "listeners";
    }

    /** The full names of {@code queues} of the run named {@code prefix} and of their {@code .dlq} queues. */
    static List<String> withDeadLetterQueues(String prefix, Collection<String> queues) {
        return queues.stream()
                .flatMap(queue -> Stream.of(prefix + queue, prefix + queue + ".dlq"))
                .toList();
    }

    /** A context of {@code config} for the run named {@code prefix}, not refreshed yet (a test may register beans first). */
    static AnnotationConfigApplicationContext context(String prefix, Class<?> config) {
        AnnotationConfigApplicationContext context = new AnnotationConfigApplicationContext();
        context.getEnvironment()
                .getPropertySources()
                .addFirst(new MapPropertySource("run", Map.of(PREFIX_PROPERTY, prefix)));
        context.register(config);
        return context;
    }

    /**
     * Ends a run: stops the listeners first (or they would declare their queues again), deletes
     * the run's {@code queues} and {@code exchanges} (full names; RabbitMQ takes the deletion of
     * one that is not there as done), closes the context, and deletes the ledger rows of the run
     * (message ids starting with {@code run-}). Does nothing on the broker if the context never
     * started.
     */
    static void cleanUp(
            @Nullable AnnotationConfigApplicationContext context,
            String run,
            Collection<String> queues,
            Collection<String> exchanges) {
        if (context != null) {
            RabbitAdmin admin = context.getBean(RabbitAdmin.class);
            context.getBean(RabbitListenerEndpointRegistry.class).stop();
            queues.forEach(admin::deleteQueue);
            exchanges.forEach(admin::deleteExchange);
            context.close();
        }
        new JdbcTemplate(TestDatabase.POSTGRESQL.dataSource())
                .update("DELETE FROM processed_messages WHERE message_id LIKE ?", run + "-%");
    }
}
