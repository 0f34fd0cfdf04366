package io.sumi.kafka.share;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sumi.consumer.IdempotentHandler;
import io.sumi.testing.TestDatabase;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ShareConsumer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.flyway.autoconfigure.FlywayAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.kafka.autoconfigure.KafkaAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.config.ShareKafkaListenerContainerFactory;
import org.springframework.kafka.core.DefaultShareConsumerFactory;
import org.springframework.kafka.listener.AbstractMessageListenerContainer;
import org.springframework.kafka.listener.AcknowledgingShareConsumerAwareMessageListener;
import org.springframework.kafka.listener.ContainerProperties;
import org.springframework.kafka.listener.DelegatingMessageListener;
import org.springframework.kafka.listener.ShareKafkaMessageListenerContainer;
import org.springframework.kafka.support.ShareAcknowledgment;

/**
 * What the share module does to share-group containers at start-up, and what it refuses (no
 * broker: the containers never start).
 */
class ShareListenerConfigurerTests {

    private static final String[] DATABASE = TestDatabase.POSTGRESQL.settings("sumi_share_test");

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(
                    KafkaAutoConfiguration.class,
                    DataSourceAutoConfiguration.class,
                    FlywayAutoConfiguration.class,
                    SumiKafkaShareAutoConfiguration.class,
                    io.sumi.autoconfigure.SumiAutoConfiguration.class,
                    io.sumi.autoconfigure.SumiKafkaAutoConfiguration.class))
            .withPropertyValues(
                    "spring.kafka.bootstrap-servers=127.0.0.1:1",
                    "spring.datasource.url=" + DATABASE[0],
                    "spring.datasource.username=" + DATABASE[1],
                    "spring.datasource.password=" + DATABASE[2],
                    "spring.flyway.locations=classpath:db/sumi/{vendor}",
                    "sumi.outbox.dispatcher.enabled=false")
            .withUserConfiguration(ShareFactory.class);

    @Test
    void aShareListenerWithIdempotentHandlerRunsInManualModeBehindSumiAndItsFactoryGetsTheDefaultPhase() {
        runner.withUserConfiguration(Listener.class).run(context -> {
            assertThat(context).hasNotFailed();
            ShareKafkaMessageListenerContainer<?, ?> container = (ShareKafkaMessageListenerContainer<?, ?>)
                    context.getBean(KafkaListenerEndpointRegistry.class).getListenerContainer("share-plain-mode");
            assertThat(container).isNotNull();
            assertThat(container.getContainerProperties().getShareAckMode())
                    .isEqualTo(ContainerProperties.ShareAckMode.MANUAL);
            assertThat(container.getContainerProperties().getMessageListener()).isInstanceOf(SumiShareListener.class);
            assertThat(container.getPhase()).isEqualTo(AbstractMessageListenerContainer.DEFAULT_PHASE);
        });
    }

    /**
     * A context stopped and started again starts the configurer again; by then something that
     * delegates (here a wrapper as the test kit's watcher is) may hold Sumi's listener. The
     * configurer leaves it alone: without the walk down the delegates it would wrap it twice.
     */
    @Test
    void startedAgainTheConfigurerFindsItsListenerUnderAWrapperAndLeavesItAlone() {
        runner.withUserConfiguration(Listener.class).run(context -> {
            ShareKafkaMessageListenerContainer<?, ?> container = (ShareKafkaMessageListenerContainer<?, ?>)
                    context.getBean(KafkaListenerEndpointRegistry.class).getListenerContainer("share-plain-mode");
            assertThat(container).isNotNull();
            ContainerProperties properties = container.getContainerProperties();
            Wrapper wrapper =
                    new Wrapper((SumiShareListener<?, ?>) Objects.requireNonNull(properties.getMessageListener()));
            properties.setMessageListener(wrapper);
            ShareListenerConfigurer configurer = context.getBean(ShareListenerConfigurer.class);

            configurer.stop();
            configurer.start();

            assertThat(properties.getMessageListener()).isSameAs(wrapper);
        });
    }

    /** Delegates to the listener it wraps, as the test kit's watcher does. */
    record Wrapper(SumiShareListener<?, ?> wrapped)
            implements AcknowledgingShareConsumerAwareMessageListener<Object, Object>,
                    DelegatingMessageListener<Object> {

        @Override
        public void onShareRecord(
                ConsumerRecord<Object, Object> record,
                @Nullable ShareAcknowledgment acknowledgment,
                ShareConsumer<?, ?> consumer) {
            throw new UnsupportedOperationException("never started");
        }

        @Override
        public Object getDelegate() {
            return wrapped;
        }
    }

    @Test
    void implicitModeIsRefusedSayingWhy() {
        runner.withUserConfiguration(Listener.class).run(context -> {
            ShareKafkaMessageListenerContainer<?, ?> configured = (ShareKafkaMessageListenerContainer<?, ?>)
                    context.getBean(KafkaListenerEndpointRegistry.class).getListenerContainer("share-plain-mode");
            assertThat(configured).isNotNull();
            // A container the configurer has not seen yet, in IMPLICIT mode, with the same listener.
            ShareKafkaMessageListenerContainer<String, String> implicit = new ShareKafkaMessageListenerContainer<>(
                    new DefaultShareConsumerFactory<>(Map.of()), implicitProperties(configured));
            implicit.setBeanName("implicit-share");
            assertThatThrownBy(
                            () -> context.getBean(ShareListenerConfigurer.class).configure(implicit))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("'implicit-share'")
                    .hasMessageContaining("IMPLICIT");
        });
    }

    private static ContainerProperties implicitProperties(ShareKafkaMessageListenerContainer<?, ?> configured) {
        ContainerProperties properties = new ContainerProperties("mail");
        SumiShareListener<?, ?> sumi =
                (SumiShareListener<?, ?>) configured.getContainerProperties().getMessageListener();
        properties.setMessageListener(sumi.getDelegate());
        properties.setShareAckMode(ContainerProperties.ShareAckMode.IMPLICIT);
        return properties;
    }

    @Test
    void aListenerThatReturnsAFutureIsRefusedAtStartUp() {
        runner.withUserConfiguration(AsyncListener.class).run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure())
                    .rootCause()
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("'share-async'")
                    .hasMessageContaining("returns a future");
        });
    }

    @Test
    void aListenerThatKeepsRepliesIsRefusedAtStartUp() {
        runner.withUserConfiguration(ReplyingListener.class).run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure())
                    .rootCause()
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("'share-replying'")
                    .hasMessageContaining("storeReply");
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
    static class Listener {

        @Bean
        Handler handler() {
            return new Handler();
        }

        static class Handler {
            @KafkaListener(
                    id = "share-plain-mode",
                    topics = "mail",
                    groupId = "mail",
                    containerFactory = "shareFactory",
                    autoStartup = "false")
            @IdempotentHandler(consumer = "mail")
            public void on(String body) {}
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class AsyncListener {

        @Bean
        Handler asyncHandler() {
            return new Handler();
        }

        static class Handler {
            @KafkaListener(
                    id = "share-async",
                    topics = "mail",
                    groupId = "mail",
                    containerFactory = "shareFactory",
                    autoStartup = "false")
            @IdempotentHandler(consumer = "mail")
            public CompletableFuture<Void> on(String body) {
                return CompletableFuture.completedFuture(null);
            }
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class ReplyingListener {

        @Bean
        Handler replyingHandler() {
            return new Handler();
        }

        static class Handler {
            @KafkaListener(
                    id = "share-replying",
                    topics = "mail",
                    groupId = "mail",
                    containerFactory = "shareFactory",
                    autoStartup = "false")
            @IdempotentHandler(consumer = "mail", storeReply = true)
            public String on(String body) {
                return "reply";
            }
        }
    }
}
