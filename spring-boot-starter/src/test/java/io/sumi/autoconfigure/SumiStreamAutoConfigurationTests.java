package io.sumi.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import io.sumi.consumer.IdempotentHandler;
import io.sumi.stream.IdempotentFunctionPostProcessor;
import io.sumi.stream.StreamSettings;
import java.time.Duration;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.integration.channel.interceptor.GlobalChannelInterceptorWrapper;

/**
 * The starter's wiring of the Spring Cloud Stream binder, without a broker: which beans it
 * declares, when it backs off, and that annotated function beans come out wrapped. The binder's
 * behaviour on real brokers is tested in binders/spring-cloud-stream.
 */
class SumiStreamAutoConfigurationTests {

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(SumiAutoConfiguration.class, SumiStreamAutoConfiguration.class));

    @Test
    void wrapsAnnotatedFunctionBeansAndLeavesOthersAlone() {
        runner.withUserConfiguration(Functions.class).run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context).hasSingleBean(IdempotentFunctionPostProcessor.class);
            assertThat(context).hasBean(SumiStreamAutoConfiguration.CHANNEL_INTERCEPTOR_BEAN_NAME);
            assertThat(context.getBean("orders").getClass().getSimpleName()).isEqualTo("IdempotentConsumer");
            assertThat(context.getBean("enrich").getClass().getSimpleName()).isEqualTo("IdempotentFunction");
            assertThat(context.getBean("plain")).isSameAs(context.getBean(Functions.class).plain);
        });
    }

    @Test
    void bindsTheStreamProperties() {
        runner.withPropertyValues("sumi.stream.busy-max-wait=90s", "sumi.stream.propagate-key=false")
                .run(context -> {
                    StreamSettings settings =
                            context.getBean(SumiStreamProperties.class).settings();
                    assertThat(settings.busyMaxWait()).isEqualTo(Duration.ofSeconds(90));
                    assertThat(settings.busyRetryInterval()).isEqualTo(StreamSettings.DEFAULT_BUSY_RETRY_INTERVAL);
                    assertThat(settings.keyHeader()).isNull();
                });
    }

    @Test
    void anInvalidAnnotationFailsStartUpWithTheReason() {
        runner.withUserConfiguration(BadLease.class)
                .run(context -> assertThat(context)
                        .hasFailed()
                        .getFailure()
                        .hasMessageContaining("Invalid @IdempotentHandler")
                        .hasMessageContaining("lease"));
    }

    /** storeReply keeps a Function's output (docs/replies.md): the function is wrapped and starts. */
    @Test
    void storeReplyOnAFunctionIsWrapped() {
        runner.withUserConfiguration(ReplyingFunction.class).run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context.getBean("quote").getClass().getSimpleName()).isEqualTo("IdempotentFunction");
        });
    }

    /** A Consumer has no output to keep: refused at start-up, never silently ignored. */
    @Test
    void storeReplyOnAConsumerFailsStartUpInsteadOfBeingIgnored() {
        runner.withUserConfiguration(ReplyingConsumer.class)
                .run(context -> assertThat(context)
                        .hasFailed()
                        .getFailure()
                        .hasMessageContaining("Invalid @IdempotentHandler")
                        .hasMessageContaining("a Consumer has no output"));
    }

    /** A batch Function with storeReply is refused (a batch has no one key for its output), as Kafka refuses batch listeners. */
    @Test
    void storeReplyOnABatchFunctionFailsStartUp() {
        runner.withUserConfiguration(ReplyingBatchFunction.class)
                .run(context -> assertThat(context)
                        .hasFailed()
                        .getFailure()
                        .hasMessageContaining("batch Functions are not supported"));
    }

    @Test
    void theMaxReplySizeReachesTheHandlerDefinitionsAndIsBounded() {
        runner.withPropertyValues("sumi.consumer.reply.max-size=2KB")
                .run(context -> assertThat(BinderSupport.defaults(context.getBean(SumiProperties.class))
                                .maxReplySize())
                        .isEqualTo(2048));
        runner.run(context -> assertThat(BinderSupport.defaults(context.getBean(SumiProperties.class))
                        .maxReplySize())
                .isEqualTo(64 * 1024));
        runner.withPropertyValues("sumi.consumer.reply.max-size=17MB")
                .run(context -> org.assertj.core.api.Assertions.assertThatIllegalStateException()
                        .isThrownBy(() -> BinderSupport.defaults(context.getBean(SumiProperties.class)))
                        .withMessageContaining("at most 16MB"));
    }

    @Test
    void backsOffForTheApplicationsOwnBeans() {
        runner.withUserConfiguration(OwnBeans.class).run(context -> {
            assertThat(context.getBean(IdempotentFunctionPostProcessor.class)).isSameAs(OwnBeans.POST_PROCESSOR);
            assertThat(context.getBean(SumiStreamAutoConfiguration.CHANNEL_INTERCEPTOR_BEAN_NAME))
                    .isSameAs(OwnBeans.INTERCEPTOR);
        });
    }

    @Test
    void withoutTheKafkaBinderDeclaresNoContainerCustomizer() {
        // The Kafka binder is not on the starter's test class path: the customizer needs it.
        runner.run(context -> assertThat(context).doesNotHaveBean("sumiKafkaBinderContainerCustomizer"));
    }

    @Test
    void staysOffWithoutSpringCloudStream() {
        runner.withClassLoader(new FilteredClassLoader("org.springframework.cloud.stream"))
                .run(context -> assertThat(context).doesNotHaveBean(IdempotentFunctionPostProcessor.class));
    }

    @Configuration(proxyBeanMethods = false)
    static class Functions {

        final Consumer<String> plain = payload -> {};

        @Bean
        @IdempotentHandler
        Consumer<String> orders() {
            return payload -> {};
        }

        @Bean
        @IdempotentHandler(key = "#payload")
        Function<String, String> enrich() {
            return String::toUpperCase;
        }

        @Bean
        Consumer<String> plain() {
            return plain;
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class ReplyingFunction {

        @Bean
        @IdempotentHandler(storeReply = true)
        Function<String, String> quote() {
            return String::toUpperCase;
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class ReplyingConsumer {

        @Bean
        @IdempotentHandler(storeReply = true)
        Consumer<String> quote() {
            return payload -> {};
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class ReplyingBatchFunction {

        @Bean
        @IdempotentHandler(storeReply = true)
        Function<List<String>, String> quote() {
            return payloads -> String.join(",", payloads);
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class BadLease {

        @Bean
        @IdempotentHandler(lease = "soon")
        Consumer<String> orders() {
            return payload -> {};
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class OwnBeans {

        static final IdempotentFunctionPostProcessor POST_PROCESSOR = new IdempotentFunctionPostProcessor(
                () -> {
                    throw new IllegalStateException("not used");
                },
                () -> {
                    throw new IllegalStateException("not used");
                },
                StreamSettings.ofDefaults());

        static final GlobalChannelInterceptorWrapper INTERCEPTOR =
                new GlobalChannelInterceptorWrapper(new org.springframework.messaging.support.ChannelInterceptor() {});

        @Bean
        static IdempotentFunctionPostProcessor myPostProcessor() {
            return POST_PROCESSOR;
        }

        @Bean(name = SumiStreamAutoConfiguration.CHANNEL_INTERCEPTOR_BEAN_NAME)
        GlobalChannelInterceptorWrapper myInterceptor() {
            return INTERCEPTOR;
        }
    }
}
