package io.sumi.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import io.sumi.consumer.IdempotentHandler;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.kafka.autoconfigure.KafkaAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.config.ShareKafkaListenerContainerFactory;
import org.springframework.kafka.core.DefaultShareConsumerFactory;
import org.springframework.kafka.listener.AbstractMessageListenerContainer;
import org.springframework.kafka.listener.AbstractShareKafkaMessageListenerContainer;

/**
 * A share-group listener (KIP-932) with {@code @IdempotentHandler} fails start-up: Sumi does not
 * settle share acknowledgements yet, and a share group drops a record after its delivery limit, so
 * Sumi's retries would lose messages there. A share-group listener without it, and Sumi's ordinary
 * listeners beside it, start. (No broker: the containers are never started.)
 */
class KafkaShareGroupListenerRefusalTests {

    private final ApplicationContextRunner runner = H2Context.withTransactionManager("sumi_share_refusal")
            .withConfiguration(AutoConfigurations.of(
                    KafkaAutoConfiguration.class, SumiAutoConfiguration.class, SumiKafkaAutoConfiguration.class))
            .withPropertyValues("spring.kafka.bootstrap-servers=127.0.0.1:1", "sumi.outbox.dispatcher.enabled=false")
            .withUserConfiguration(ShareFactory.class);

    @Test
    void aShareGroupListenerWithIdempotentHandlerFailsStartUpSayingWhatToUse() {
        runner.withUserConfiguration(IdempotentShareListener.class).run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure())
                    .rootCause()
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("'idempotent-share'")
                    .hasMessageContaining("share-group container")
                    .hasMessageContaining("group.share.delivery.count.limit")
                    .hasMessageContaining("ConcurrentKafkaListenerContainerFactory");
        });
    }

    @Test
    void aShareGroupListenerWithoutIdempotentHandlerStartsBesideAnIdempotentOrdinaryListener() {
        runner.withUserConfiguration(PlainShareListener.class, IdempotentOrdinaryListener.class)
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    KafkaListenerEndpointRegistry registry = context.getBean(KafkaListenerEndpointRegistry.class);
                    assertThat(registry.getListenerContainer("plain-share"))
                            .isInstanceOf(AbstractShareKafkaMessageListenerContainer.class);
                    assertThat(registry.getListenerContainer("idempotent-ordinary"))
                            .isNotNull();
                    // The share factory's default phase (0) would have become the registry's, and
                    // every container would start before Sumi teaches their error handlers.
                    assertThat(registry.getListenerContainer("plain-share").getPhase())
                            .isEqualTo(AbstractMessageListenerContainer.DEFAULT_PHASE);
                    assertThat(registry.getPhase()).isEqualTo(AbstractMessageListenerContainer.DEFAULT_PHASE);
                });
    }

    @Configuration(proxyBeanMethods = false)
    static class ShareFactory {

        @Bean
        ShareKafkaListenerContainerFactory<String, String> shareFactory() {
            return new ShareKafkaListenerContainerFactory<>(new DefaultShareConsumerFactory<>(Map.of(
                    ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:1",
                    ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class,
                    ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class)));
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class IdempotentShareListener {

        @Bean
        Listener listener() {
            return new Listener();
        }

        static class Listener {
            @KafkaListener(
                    id = "idempotent-share",
                    topics = "mail",
                    groupId = "mail",
                    containerFactory = "shareFactory",
                    autoStartup = "false")
            @IdempotentHandler(consumer = "mail")
            void on(String body) {}
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class PlainShareListener {

        @Bean
        Listener plainShareListener() {
            return new Listener();
        }

        static class Listener {
            @KafkaListener(
                    id = "plain-share",
                    topics = "audit",
                    groupId = "audit",
                    containerFactory = "shareFactory",
                    autoStartup = "false")
            void on(String body) {}
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class IdempotentOrdinaryListener {

        @Bean
        Listener idempotentOrdinaryListener() {
            return new Listener();
        }

        static class Listener {
            @KafkaListener(id = "idempotent-ordinary", topics = "mail", groupId = "mail", autoStartup = "false")
            @IdempotentHandler(consumer = "mail")
            void on(String body) {}
        }
    }
}
