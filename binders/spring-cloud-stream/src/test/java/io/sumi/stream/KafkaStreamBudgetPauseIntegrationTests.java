package io.sumi.stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.sumi.budget.BudgetConfig;
import io.sumi.budget.BudgetRegistry;
import io.sumi.budget.BudgetScope;
import io.sumi.consumer.IdempotentExecutor;
import io.sumi.consumer.IdempotentHandler;
import io.sumi.testing.TestDatabase;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.cloud.stream.binding.BindingService;
import org.springframework.cloud.stream.binding.BindingsLifecycleController;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.kafka.core.DefaultKafkaProducerFactory;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.test.EmbeddedKafkaBroker;
import org.springframework.kafka.test.context.EmbeddedKafka;
import org.springframework.kafka.test.utils.KafkaTestUtils;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * A Spring Cloud Stream binding (Kafka binder, in-process KRaft broker) of a function bound to a
 * budget is paused while the budget is exhausted, through {@link BindingsLifecycleController}, and
 * resumed when the budget can take calls again; the messages refused meanwhile are processed
 * after it, none lost.
 */
@SpringBootTest(
        classes = KafkaStreamBudgetPauseIntegrationTests.App.class,
        properties = {
            "spring.main.web-application-type=none",
            "spring.flyway.locations=classpath:db/sumi/{vendor}",
            "spring.cloud.function.definition=sms",
            "spring.cloud.stream.default-binder=kafka",
            "spring.cloud.stream.kafka.binder.brokers=${spring.embedded.kafka.brokers}",
            "spring.cloud.stream.kafka.default.consumer.start-offset=earliest",
            "spring.cloud.stream.bindings.sms-in-0.destination=budget.sms.topic",
            "spring.cloud.stream.bindings.sms-in-0.group=sms",
            "spring.cloud.stream.bindings.sms-in-0.consumer.max-attempts=1"
        })
@EmbeddedKafka(partitions = 1, topics = "budget.sms.topic")
class KafkaStreamBudgetPauseIntegrationTests {

    static final String RUN = UUID.randomUUID().toString().substring(0, 8);
    static final String BINDING = "sms-in-0";

    static final Set<String> SENT = ConcurrentHashMap.newKeySet();

    @DynamicPropertySource
    static void database(DynamicPropertyRegistry registry) {
        TestDatabase.POSTGRESQL.registerDataSource(registry::add);
    }

    @Autowired
    EmbeddedKafkaBroker broker;

    @Autowired
    BindingsLifecycleController bindings;

    @Autowired
    BudgetRegistry budgets;

    @Autowired
    BudgetBindingPauser pauser;

    @Test
    void anExhaustedBudgetPausesTheBindingAndARaisedLimitResumesIt() {
        Map<String, Object> props = KafkaTestUtils.producerProps(broker);
        KafkaTemplate<String, String> template = new KafkaTemplate<>(
                new DefaultKafkaProducerFactory<>(props, new StringSerializer(), new StringSerializer()));
        for (int i = 0; i < 5; i++) {
            String key = RUN + "-sms-" + i;
            ProducerRecord<String, String> record = new ProducerRecord<>("budget.sms.topic", key, "text " + i);
            record.headers().add("outbox-id", key.getBytes(StandardCharsets.UTF_8));
            template.send(record);
        }
        template.flush();
        template.getProducerFactory().reset();

        await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
            assertThat(SENT).hasSize(3);
            assertThat(pauser.isPaused(BINDING)).isTrue();
            assertThat(bindings.queryState(BINDING))
                    .allSatisfy(binding -> assertThat(binding.isPaused()).isTrue());
        });
        // Paused: nothing more is fetched, nothing more is spent.
        await().during(Duration.ofSeconds(2)).atMost(Duration.ofSeconds(3)).until(() -> SENT.size() == 3);

        budgets.update(
                "sms",
                BudgetConfig.custom()
                        .limit(10)
                        .window(Duration.ofHours(1))
                        .scope(BudgetScope.INSTANCE)
                        .build());

        await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
            assertThat(SENT).hasSize(5);
            assertThat(pauser.isPaused(BINDING)).isFalse();
            assertThat(bindings.queryState(BINDING))
                    .allSatisfy(binding -> assertThat(binding.isPaused()).isFalse());
        });
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(SumiStreamTestConfiguration.class)
    static class App {

        @Bean
        @IdempotentHandler(budget = "sms")
        Consumer<String> sms() {
            return text ->
                    SENT.add(io.sumi.consumer.IdempotencyContext.current().key());
        }

        @Bean
        BudgetRegistry budgetRegistry() {
            return BudgetRegistry.builder()
                    .budget(
                            "sms",
                            BudgetConfig.custom()
                                    .limit(3)
                                    .window(Duration.ofHours(1))
                                    .scope(BudgetScope.INSTANCE)
                                    .build())
                    .build();
        }

        /** As the starter does: handlers bound to a budget run under it. */
        @Bean
        static BeanPostProcessor budgetedExecutor(ObjectProvider<BudgetRegistry> budgets) {
            return new BeanPostProcessor() {
                @Override
                public Object postProcessAfterInitialization(Object bean, String beanName) {
                    return bean instanceof IdempotentExecutor executor
                            ? budgets.getObject().decorate(executor)
                            : bean;
                }
            };
        }

        @Bean
        BudgetBindingPauser budgetBindingPauser(
                BudgetRegistry budgets,
                BindingsLifecycleController bindings,
                BindingService bindingService,
                IdempotentFunctionPostProcessor functions) {
            return new BudgetBindingPauser(
                    budgets,
                    bindings,
                    functions::functionBudgets,
                    () -> Set.of(bindingService.getConsumerBindingNames()),
                    Duration.ofMillis(200),
                    null);
        }
    }
}
