package io.sumi.autoconfigure;

import io.micrometer.core.instrument.MeterRegistry;
import io.sumi.autoconfigure.actuate.SumiOutboxCdcHealthIndicator;
import io.sumi.outbox.OutboxDispatcher;
import io.sumi.outbox.cdc.OutboxCdc;
import io.sumi.outbox.cdc.OutboxCdcMetrics;
import java.time.Duration;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.context.SmartLifecycle;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;

/**
 * CDC dispatch of the outbox ({@link OutboxCdc}) when {@code sumi-outbox-cdc} is on the class path,
 * {@code sumi.outbox.cdc.enabled=true} and the outbox has a dispatcher: every instance runs it, one
 * streams the slot. The polling dispatcher keeps running as the safety net, with
 * {@code sumi.outbox.cdc.polling-interval} and without the local wake-up after commit.
 */
@AutoConfiguration(after = SumiOutboxAutoConfiguration.class)
@ConditionalOnClass(OutboxCdc.class)
@ConditionalOnProperty(prefix = "sumi.outbox.cdc", name = "enabled", havingValue = "true")
@ConditionalOnBean(OutboxDispatcher.class)
@EnableConfigurationProperties({SumiOutboxCdcProperties.class, SumiOutboxProperties.class})
public class SumiOutboxCdcAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean
    OutboxCdc sumiOutboxCdc(OutboxDispatcher dispatcher, SumiOutboxCdcProperties properties, Environment environment) {
        String url = properties.url() != null ? properties.url() : environment.getProperty("spring.datasource.url");
        if (url == null) {
            throw new IllegalStateException("sumi.outbox.cdc.enabled=true needs the database's JDBC URL:"
                    + " set sumi.outbox.cdc.url (or spring.datasource.url)");
        }
        OutboxCdc.Builder builder = OutboxCdc.builder(dispatcher, url)
                .user(
                        properties.username() != null
                                ? properties.username()
                                : environment.getProperty("spring.datasource.username"))
                .password(
                        properties.password() != null
                                ? properties.password()
                                : environment.getProperty("spring.datasource.password"))
                .slotName(properties.slotName())
                .publicationName(properties.publicationName())
                .schema(properties.schema())
                .takeOverInterval(properties.takeOverInterval())
                .heartbeatInterval(properties.heartbeatInterval())
                .offsetFlushInterval(properties.offsetFlushInterval());
        properties.engine().forEach(builder::engineProperty);
        return builder.build();
    }

    @Bean
    @ConditionalOnMissingBean
    OutboxCdcLifecycle sumiOutboxCdcLifecycle(OutboxCdc cdc) {
        return new OutboxCdcLifecycle(cdc);
    }

    @Bean
    @ConditionalOnMissingBean
    OutboxCdcMetrics sumiOutboxCdcMetrics(
            OutboxCdc cdc, SumiOutboxProperties outbox, ObjectProvider<MeterRegistry> meterRegistry) {
        OutboxCdcMetrics metrics = new OutboxCdcMetrics(cdc, outbox.metricsRefreshInterval());
        meterRegistry.ifUnique(metrics::bindTo);
        return metrics;
    }

    /** The slot's health, with Actuator's health support on the class path. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "org.springframework.boot.health.contributor.HealthIndicator")
    @ConditionalOnEnabledHealthIndicator("sumi")
    static class Health {

        @Bean
        @ConditionalOnMissingBean
        SumiOutboxCdcHealthIndicator sumiOutboxCdcHealthIndicator(OutboxCdc cdc, SumiOutboxCdcProperties properties) {
            return new SumiOutboxCdcHealthIndicator(cdc, properties.maxRetainedWal());
        }
    }

    /** Starts the CDC path with the context (start fails on a database that does not allow it) and stops it first. */
    static final class OutboxCdcLifecycle implements SmartLifecycle {

        private final OutboxCdc cdc;
        private volatile boolean running;

        OutboxCdcLifecycle(OutboxCdc cdc) {
            this.cdc = cdc;
        }

        @Override
        public void start() {
            cdc.start();
            running = true;
        }

        @Override
        public void stop() {
            cdc.stop(Duration.ofSeconds(30));
            running = false;
        }

        @Override
        public boolean isRunning() {
            return running;
        }
    }
}
