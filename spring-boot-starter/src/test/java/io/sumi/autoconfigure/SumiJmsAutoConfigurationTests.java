package io.sumi.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sumi.consumer.IdempotencyContext;
import io.sumi.consumer.IdempotentHandler;
import io.sumi.jms.IdempotencyKeyJmsPostProcessor;
import io.sumi.jms.IdempotentJmsHandlerAdvisor;
import io.sumi.jms.SumiJmsListenerContainerFactoryPostProcessor;
import jakarta.jms.TextMessage;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.springframework.boot.artemis.autoconfigure.ArtemisAutoConfiguration;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jms.autoconfigure.JmsAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jms.annotation.JmsListener;
import org.springframework.jms.config.DefaultJmsListenerContainerFactory;
import org.springframework.jms.core.JmsTemplate;

/**
 * The JMS binder through Spring Boot: Boot's embedded Artemis broker and listener container
 * factory, Sumi's auto-configuration. A duplicate runs once; the factory keeps its type; the
 * passthrough is on the {@code JmsTemplate} bean. The ledger is an in-memory H2 (the binder's own
 * tests run the real databases).
 */
class SumiJmsAutoConfigurationTests {

    private static ApplicationContextRunner runner() {
        return H2Context.withTransactionManager("sumi_jms")
                .withPropertyValues(
                        "spring.artemis.mode=embedded",
                        "spring.artemis.embedded.persistent=false",
                        "spring.artemis.embedded.server-id="
                                + Math.abs(UUID.randomUUID().hashCode() % 10_000 + 100),
                        "sumi.outbox.dispatcher.enabled=false")
                .withConfiguration(AutoConfigurations.of(
                        ArtemisAutoConfiguration.class,
                        JmsAutoConfiguration.class,
                        SumiAutoConfiguration.class,
                        SumiJmsAutoConfiguration.class))
                .withUserConfiguration(App.class);
    }

    @Test
    void aDuplicateDeliveredThroughBootsContainerFactoryRunsOnceAndTheFactoryKeepsItsType() {
        runner().run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context).hasSingleBean(IdempotentJmsHandlerAdvisor.class);
            assertThat(context).hasSingleBean(SumiJmsListenerContainerFactoryPostProcessor.class);
            assertThat(context.getBean("jmsListenerContainerFactory"))
                    .isInstanceOf(DefaultJmsListenerContainerFactory.class)
                    .isInstanceOf(SumiJmsListenerContainerFactoryPostProcessor.SumiWrapped.class);
            assertThat(context.getBean(JmsTemplate.class).getMessageConverter())
                    .isInstanceOf(IdempotencyKeyJmsPostProcessor.PassthroughConverter.class);

            JmsTemplate template = context.getBean(JmsTemplate.class);
            for (int copy = 0; copy < 2; copy++) {
                template.send("sumi.starter.jms", session -> {
                    TextMessage message = session.createTextMessage("hello");
                    message.setStringProperty("outbox_id", "starter-key");
                    return message;
                });
            }
            Listener listener = context.getBean(Listener.class);
            SimpleMeterRegistry meters = context.getBean(SimpleMeterRegistry.class);
            await().atMost(Duration.ofSeconds(30))
                    .until(() -> meters.find("sumi.messages")
                                            .tag("outcome", "duplicate")
                                            .counter()
                                    != null
                            && meters.get("sumi.messages")
                                            .tag("outcome", "duplicate")
                                            .counter()
                                            .count()
                                    == 1);
            assertThat(listener.effects()).containsOnlyKeys("starter-key");
            assertThat(listener.effects().get("starter-key").get()).isEqualTo(1);
        });
    }

    @Configuration(proxyBeanMethods = false)
    static class App {

        @Bean
        SimpleMeterRegistry meters() {
            return new SimpleMeterRegistry();
        }

        @Bean
        Listener listener() {
            return new Listener();
        }
    }

    static class Listener {

        private final Map<String, AtomicInteger> effects = new ConcurrentHashMap<>();

        @JmsListener(destination = "sumi.starter.jms")
        @IdempotentHandler
        public void onMessage(String payload) {
            effects.computeIfAbsent(IdempotencyContext.current().key(), k -> new AtomicInteger())
                    .incrementAndGet();
        }

        Map<String, AtomicInteger> effects() {
            return effects;
        }
    }
}
