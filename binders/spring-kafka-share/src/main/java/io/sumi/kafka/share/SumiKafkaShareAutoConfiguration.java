package io.sumi.kafka.share;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.observation.ObservationRegistry;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.core.KafkaAdmin;

/**
 * Guards share-group {@code @KafkaListener}s that run an {@code @IdempotentHandler}
 * ({@link ShareListenerConfigurer}) on Spring Kafka 4.1 and later. Runs before Sumi's Kafka
 * auto-configuration, whose start-up refusal of such listeners ({@code sumiShareGroupListenerCheck})
 * yields to the bean defined here ({@value #BEAN_NAME}).
 *
 * @since 0.1.0
 */
@AutoConfiguration(
        afterName = "org.springframework.boot.kafka.autoconfigure.KafkaAutoConfiguration",
        beforeName = "io.sumi.autoconfigure.SumiKafkaAutoConfiguration")
@ConditionalOnClass(name = "org.springframework.kafka.listener.ShareConsumerRecordRecoverer")
@EnableConfigurationProperties(SumiKafkaShareProperties.class)
public class SumiKafkaShareAutoConfiguration {

    /** The name of the configurer's bean, which the starter's refusal of share listeners yields to. */
    public static final String BEAN_NAME = "sumiShareListenerConfigurer";

    @Bean(BEAN_NAME)
    @ConditionalOnBean(KafkaListenerEndpointRegistry.class)
    @ConditionalOnMissingBean
    ShareListenerConfigurer sumiShareListenerConfigurer(
            ObjectProvider<KafkaListenerEndpointRegistry> registry,
            SumiKafkaShareProperties properties,
            ObjectProvider<MeterRegistry> meterRegistry,
            ObjectProvider<ObservationRegistry> observationRegistry,
            ObjectProvider<KafkaAdmin> kafkaAdmin) {
        return new ShareListenerConfigurer(
                registry::getObject,
                properties.busyPolicy(),
                meterRegistry.getIfUnique(),
                observationRegistry::getIfUnique,
                new ClusterId(kafkaAdmin));
    }

    /** The cluster's id as the application's {@code KafkaAdmin} knows it, asked until it answers. */
    private static final class ClusterId implements Supplier<@Nullable String> {

        private final ObjectProvider<KafkaAdmin> kafkaAdmin;
        private volatile @Nullable String known;

        ClusterId(ObjectProvider<KafkaAdmin> kafkaAdmin) {
            this.kafkaAdmin = kafkaAdmin;
        }

        @Override
        public @Nullable String get() {
            String id = known;
            if (id == null) {
                KafkaAdmin admin = kafkaAdmin.getIfUnique();
                // KafkaAdmin asks the broker once, and again only every few minutes after a failure.
                id = admin == null ? null : admin.clusterId();
                known = id;
            }
            return id;
        }
    }
}
