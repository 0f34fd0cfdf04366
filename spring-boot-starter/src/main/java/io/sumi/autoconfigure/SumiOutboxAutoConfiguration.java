package io.sumi.autoconfigure;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import io.sumi.outbox.Outbox;
import io.sumi.outbox.OutboxDispatcher;
import io.sumi.outbox.OutboxMetrics;
import io.sumi.outbox.OutboxPruner;
import io.sumi.outbox.OutboxPublisher;
import io.sumi.outbox.OutboxTable;
import io.sumi.outbox.kafka.KafkaOutboxPublisher;
import java.time.Clock;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.BeanClassLoaderAware;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.kafka.autoconfigure.KafkaProperties;
import org.springframework.context.SmartLifecycle;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;
import org.springframework.kafka.core.ProducerFactory;

/**
 * The transactional outbox: the {@link OutboxTable} (also the operator's API: stats, parked rows,
 * re-drive), the {@link Outbox} whose commits wake the local dispatcher, the Kafka
 * {@link OutboxPublisher}, the {@link OutboxDispatcher} with its lifecycle, the retention job and
 * the backlog gauges, configured under {@code sumi.outbox}. Active when {@code sumi-outbox-producer}
 * is on the class path and a DataSource exists; every bean backs off when the application defines
 * its own.
 */
@AutoConfiguration(
        after = SumiAutoConfiguration.class,
        afterName = {
            "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration",
            "org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration",
            "org.springframework.boot.transaction.autoconfigure.TransactionAutoConfiguration",
            "org.springframework.boot.flyway.autoconfigure.FlywayAutoConfiguration",
            "org.springframework.boot.kafka.autoconfigure.KafkaAutoConfiguration"
        })
@ConditionalOnClass(Outbox.class)
@ConditionalOnBean(DataSource.class)
@ConditionalOnProperty(prefix = "sumi.outbox", name = "enabled", havingValue = "true", matchIfMissing = true)
@EnableConfigurationProperties(SumiOutboxProperties.class)
public class SumiOutboxAutoConfiguration implements BeanClassLoaderAware {

    private @Nullable ClassLoader classLoader;

    @Override
    public void setBeanClassLoader(ClassLoader classLoader) {
        this.classLoader = classLoader;
    }

    @Bean
    @ConditionalOnMissingBean
    OutboxTable sumiOutboxTable(DataSource dataSource, SumiOutboxProperties properties, ObjectProvider<Clock> clock) {
        return OutboxTable.builder(dataSource)
                .tableName(properties.tableName())
                .clock(clock.getIfUnique(Clock::systemUTC))
                .build();
    }

    @Bean
    @ConditionalOnMissingBean
    Outbox sumiOutbox(
            OutboxTable table,
            ObjectProvider<OutboxDispatcher> dispatcher,
            ObjectProvider<OutboxTraceContext> traceContext,
            Environment environment) {
        Outbox.Builder builder = Outbox.builder(table);
        // Under CDC the log wakes the streaming instance; a local wake-up would race it for every row.
        if (OutboxCdcMode.pollingInterval(environment, classLoader) == null) {
            // Looked up on each commit: the dispatcher may be off on this instance, or not created yet.
            builder.afterCommit(() -> dispatcher.ifAvailable(OutboxDispatcher::wakeUp));
        }
        traceContext.ifAvailable(context -> builder.traceContext(context::headers));
        return builder.build();
    }

    /** With Micrometer Tracing on the classpath, appends store the current trace context (docs/tracing.md). */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "io.micrometer.tracing.Tracer")
    static class Tracing {

        @Bean
        @ConditionalOnMissingBean
        OutboxTraceContext sumiOutboxTraceContext(
                ObjectProvider<io.micrometer.tracing.Tracer> tracer,
                ObjectProvider<io.micrometer.tracing.propagation.Propagator> propagator) {
            return new OutboxTraceContext(tracer, propagator);
        }
    }

    @Bean
    @ConditionalOnMissingBean
    OutboxMetrics sumiOutboxMetrics(
            OutboxTable table, SumiOutboxProperties properties, ObjectProvider<MeterRegistry> meterRegistry) {
        OutboxMetrics metrics = new OutboxMetrics(table, properties.metricsRefreshInterval());
        // Bound here for registries Boot does not bind MeterBinder beans to; OutboxMetrics binds once per registry.
        meterRegistry.ifUnique(metrics::bindTo);
        return metrics;
    }

    @Bean
    @ConditionalOnMissingBean
    OutboxPruner sumiOutboxPruner(
            OutboxTable table, SumiOutboxProperties properties, ObjectProvider<MeterRegistry> meterRegistry) {
        return OutboxPruner.builder(table)
                .retention(properties.retention())
                .batchSize(properties.pruning().batchSize())
                .maxBatches(properties.pruning().maxBatches())
                .meterRegistry(meterRegistry.getIfUnique(CompositeMeterRegistry::new))
                .build();
    }

    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnProperty(
            prefix = "sumi.outbox.pruning",
            name = "enabled",
            havingValue = "true",
            matchIfMissing = true)
    OutboxPruningScheduler sumiOutboxPruningScheduler(OutboxPruner pruner, SumiOutboxProperties properties) {
        return new OutboxPruningScheduler(pruner, properties.pruning().cron());
    }

    /**
     * The dispatcher of this instance, unless {@code sumi.outbox.dispatcher.enabled=false}. Declared
     * here, not in a nested configuration, so that the publisher beans of the nested configurations
     * are registered before its condition is evaluated.
     */
    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnBean(OutboxPublisher.class)
    @ConditionalOnProperty(
            prefix = "sumi.outbox.dispatcher",
            name = "enabled",
            havingValue = "true",
            matchIfMissing = true)
    OutboxDispatcher sumiOutboxDispatcher(
            OutboxTable table,
            OutboxPublisher publisher,
            SumiOutboxProperties properties,
            ObjectProvider<MeterRegistry> meterRegistry,
            Environment environment) {
        SumiOutboxProperties.Dispatcher dispatcher = properties.dispatcher();
        // Under CDC, polling is the safety net: a long interval.
        Duration underCdc = OutboxCdcMode.pollingInterval(environment, classLoader);
        return OutboxDispatcher.builder(table, publisher)
                .batchSize(dispatcher.batchSize())
                .lease(dispatcher.lease())
                .sendTimeout(dispatcher.sendTimeout())
                .minPollInterval(underCdc != null ? underCdc : dispatcher.minPollInterval())
                .maxPollInterval(underCdc != null ? underCdc : dispatcher.maxPollInterval())
                .maxAttempts(dispatcher.maxAttempts())
                .backoff(dispatcher.backoff().toBackoff())
                .orderedTopics(dispatcher.orderedTopics())
                .shadowTopics(
                        dispatcher.shadowMode() ? List.of(OutboxDispatcher.ALL_TOPICS) : dispatcher.shadowTopics())
                .cutoff(dispatcher.cutoff())
                .pipelineDepth(dispatcher.pipelineDepth())
                .statisticsCheckInterval(dispatcher.statisticsCheckInterval())
                .pollDelay(OutboxCdcMode.pollDelay(environment, classLoader))
                .meterRegistry(meterRegistry.getIfUnique(CompositeMeterRegistry::new))
                .build();
    }

    @Bean
    @ConditionalOnMissingBean
    OutboxDispatcherLifecycle sumiOutboxDispatcherLifecycle(ObjectProvider<OutboxDispatcher> dispatcher) {
        return new OutboxDispatcherLifecycle(dispatcher);
    }

    /**
     * The Kafka publisher, on a producer of its own configured from the application's Kafka
     * settings, made idempotent with {@code acks=all} and String serializers whatever those say.
     */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(
            name = {
                "org.apache.kafka.clients.producer.KafkaProducer",
                "org.springframework.boot.kafka.autoconfigure.KafkaProperties",
                "org.springframework.kafka.core.ProducerFactory"
            })
    static class KafkaPublisherConfiguration {

        @Bean
        // Beside the RabbitMQ publisher (which routes the topics it does not take here), never beside the
        // application's.
        @ConditionalOnMissingBean(
                value = OutboxPublisher.class,
                ignoredType = {"io.sumi.outbox.rabbit.RabbitOutboxPublisher", "io.sumi.outbox.TopicRoutingPublisher"})
        @ConditionalOnBean(KafkaProperties.class)
        KafkaOutboxPublisher sumiKafkaOutboxPublisher(
                KafkaProperties kafkaProperties,
                ObjectProvider<ProducerFactory<?, ?>> producerFactory,
                SumiOutboxProperties properties) {
            Duration dispatcherTimeout = properties.dispatcher().sendTimeout();
            Duration sendTimeout = properties.kafka().sendTimeoutOr(dispatcherTimeout);
            if (sendTimeout.compareTo(dispatcherTimeout) > 0) {
                throw new IllegalStateException(
                        "sumi.outbox.kafka.send-timeout (" + sendTimeout + ") must not exceed"
                                + " sumi.outbox.dispatcher.send-timeout (" + dispatcherTimeout
                                + "): the dispatcher cuts every batch"
                                + " at its own send timeout. Leave sumi.outbox.kafka.send-timeout unset to use the dispatcher's.");
            }
            ProducerFactory<?, ?> factory = producerFactory.getIfUnique();
            // The application's producer factory knows the connection details and SSL bundles.
            Map<String, Object> config = new HashMap<>(
                    factory != null ? factory.getConfigurationProperties() : kafkaProperties.buildProducerProperties());
            Object clientId = config.get("client.id");
            config.put("client.id", (clientId == null ? "" : clientId + "-") + "sumi-outbox");
            return KafkaOutboxPublisher.create(config, sendTimeout);
        }
    }

    /**
     * Starts the dispatcher's loop with the context and stops it (letting the round in progress
     * finish) before the DataSource and the producer are closed. Does nothing when no dispatcher
     * bean exists.
     */
    static final class OutboxDispatcherLifecycle implements SmartLifecycle {

        private final ObjectProvider<OutboxDispatcher> dispatcher;

        OutboxDispatcherLifecycle(ObjectProvider<OutboxDispatcher> dispatcher) {
            this.dispatcher = dispatcher;
        }

        @Override
        public void start() {
            dispatcher.ifAvailable(OutboxDispatcher::start);
        }

        @Override
        public void stop() {
            dispatcher.ifAvailable(d -> d.stop(Duration.ofSeconds(30)));
        }

        @Override
        public boolean isRunning() {
            OutboxDispatcher current = dispatcher.getIfAvailable();
            return current != null && current.isRunning();
        }
    }

    /**
     * Runs the {@link OutboxPruner} on its cron, on a thread of its own. A failed run is logged and
     * the next run tries again.
     */
    static final class OutboxPruningScheduler extends CronJob {

        OutboxPruningScheduler(OutboxPruner pruner, String cron) {
            super("outbox-pruner", pruner::prune, "sumi.outbox.pruning.cron", cron);
        }
    }
}
