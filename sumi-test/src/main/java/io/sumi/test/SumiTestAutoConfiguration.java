package io.sumi.test;

import io.sumi.consumer.IdempotentExecutor;
import io.sumi.store.ProcessedMessageStore;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.cloud.stream.binder.test.InputDestination;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.core.KafkaAdmin;

/**
 * The kit in a Spring test: registered in {@code sumi-test}'s auto-configuration imports, so every
 * {@code @SpringBootTest} on a classpath with the kit (test scope) has it, with no wiring (any
 * other context only with {@code sumi.test.enabled=true}). It
 * watches the application's executor and Kafka listener containers (passing everything on
 * unchanged), puts the {@link CrashInjector} around the ledger (it does nothing until armed), and
 * offers the {@link SumiTest}. {@code sumi.test.enabled=false} leaves the context untouched, and
 * so does an application run outside a test (one that ships the kit's {@link CrashInjector} in a
 * demo, as the charge example does).
 */
@AutoConfiguration
@ConditionalOnClass(name = "org.springframework.test.context.TestContextManager")
@Conditional(OnSpringBootTestCondition.class)
public class SumiTestAutoConfiguration {

    @Bean
    static DeliveryLog sumiTestDeliveryLog() {
        return new DeliveryLog();
    }

    @Bean
    @ConditionalOnMissingBean
    static CrashInjector sumiTestCrashInjector() {
        return new CrashInjector();
    }

    /** Watches the executor and puts the crash injector around the ledger. */
    @Bean
    static BeanPostProcessor sumiTestPostProcessor(
            ObjectProvider<DeliveryLog> log, ObjectProvider<CrashInjector> crashes) {
        return new BeanPostProcessor() {
            @Override
            public Object postProcessAfterInitialization(Object bean, String beanName) {
                if (bean instanceof IdempotentExecutor executor && !(bean instanceof RecordingExecutor)) {
                    return new RecordingExecutor(executor, log.getObject());
                }
                if (bean instanceof ProcessedMessageStore store) {
                    return crashes.getObject().wrap(store);
                }
                return bean;
            }
        };
    }

    @Bean
    @ConditionalOnMissingBean
    SumiTest sumiTest(
            DeliveryLog log,
            CrashInjector crashes,
            ObjectProvider<ProcessedMessageStore> ledger,
            ObjectProvider<KafkaDuplicates> kafka,
            ObjectProvider<StreamDuplicates> stream) {
        return new SumiTest(log, crashes, ledger::getIfUnique, kafka.getIfAvailable(), stream.getIfAvailable());
    }

    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(KafkaAdmin.class)
    static class Kafka {

        @Bean
        static BeanPostProcessor sumiTestKafkaDeliveryObserver(ObjectProvider<DeliveryLog> log) {
            return KafkaDeliveryObserver.postProcessor(log::getObject);
        }

        /** The share-group containers (Spring Kafka 4.1), which take no record interceptor. */
        @Bean
        static KafkaShareDeliveryObserver sumiTestKafkaShareDeliveryObserver(
                ObjectProvider<KafkaListenerEndpointRegistry> listeners, ObjectProvider<DeliveryLog> log) {
            return new KafkaShareDeliveryObserver(listeners::getObject, log::getObject);
        }

        @Bean(destroyMethod = "close")
        @ConditionalOnMissingBean
        KafkaDuplicates sumiTestKafkaDuplicates(
                ObjectProvider<KafkaAdmin> admin, KafkaListenerEndpointRegistry listeners, Environment environment) {
            KafkaAdmin kafkaAdmin = admin.getIfAvailable();
            java.util.Map<String, Object> connection = new java.util.HashMap<>(
                    kafkaAdmin != null ? kafkaAdmin.getConfigurationProperties() : java.util.Map.of());
            if (!connection.containsKey("bootstrap.servers")) {
                String embedded = environment.getProperty("spring.embedded.kafka.brokers");
                if (embedded != null) {
                    connection.put("bootstrap.servers", embedded);
                }
            }
            return new KafkaDuplicates(
                    connection, listeners, environment.getProperty("sumi.test.kafka.dead-letter-suffix", "-dlt"));
        }
    }

    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(InputDestination.class)
    @ConditionalOnBean(InputDestination.class)
    static class Stream {

        @Bean
        @ConditionalOnMissingBean
        StreamDuplicates sumiTestStreamDuplicates(InputDestination input) {
            return new StreamDuplicates(input);
        }
    }
}
