package io.sumi.rabbit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.github.resilience4j.circuitbreaker.CircuitBreaker.State;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sumi.budget.BudgetConfig;
import io.sumi.budget.BudgetRegistry;
import io.sumi.consumer.IdempotentExecutor;
import io.sumi.consumer.IdempotentHandler;
import io.sumi.store.MessageStatus;
import io.sumi.store.ProcessedMessage;
import io.sumi.store.ProcessedMessageStore;
import io.sumi.testing.MutableClock;
import io.sumi.testing.TestRabbit;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.amqp.core.AcknowledgeMode;
import org.springframework.amqp.core.BindingBuilder;
import org.springframework.amqp.core.Declarables;
import org.springframework.amqp.core.DirectExchange;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.MessageProperties;
import org.springframework.amqp.core.Queue;
import org.springframework.amqp.core.QueueBuilder;
import org.springframework.amqp.rabbit.annotation.EnableRabbit;
import org.springframework.amqp.rabbit.annotation.RabbitListener;
import org.springframework.amqp.rabbit.config.SimpleRabbitListenerContainerFactory;
import org.springframework.amqp.rabbit.connection.CachingConnectionFactory;
import org.springframework.amqp.rabbit.connection.ConnectionFactory;
import org.springframework.amqp.rabbit.core.RabbitAdmin;
import org.springframework.amqp.rabbit.core.RabbitTemplate;
import org.springframework.amqp.rabbit.listener.AbstractMessageListenerContainer;
import org.springframework.amqp.rabbit.listener.RabbitListenerEndpointRegistry;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.messaging.handler.annotation.Header;

/**
 * A spent budget on a {@code @RabbitListener} against the real RabbitMQ (127.0.0.1:5672) and the
 * local PostgreSQL: the {@link RabbitBudgetListenerStopper} stops the container (the refused
 * messages go back to the queue: none lost, none acknowledged or claimed without running) and
 * starts it again when the budget's breaker half-opens (the window rolls on an injected clock, no
 * sleeping), and the backlog drains, each message once. Negative control: without the stopper the
 * container keeps running and the refused messages come back again and again.
 */
class RabbitBudgetStopIntegrationTests {

    static final String RUN = UUID.randomUUID().toString().substring(0, 8);
    static final Duration BUSY_INTERVAL = Duration.ofMillis(200);

    private @Nullable AnnotationConfigApplicationContext context;
    private @Nullable CachingConnectionFactory senderConnections;
    private String prefix = "";

    @AfterEach
    void cleanUp() {
        RabbitBinderTestWiring.cleanUp(
                context,
                RUN,
                RabbitBinderTestWiring.withDeadLetterQueues(prefix, List.of("charges")),
                List.of(prefix + "dlx"));
        if (senderConnections != null) {
            senderConnections.destroy();
        }
    }

    @Test
    void aSpentBudgetStopsTheContainerWithTheMessagesInTheQueueAndItRestartsAndDrainsWhenTheBudgetHalfOpens() {
        start("stop", true);
        RabbitBudgetListenerStopper stopper = bean(RabbitBudgetListenerStopper.class);
        AbstractMessageListenerContainer container = container();
        for (int i = 1; i <= 5; i++) {
            send(key(i));
        }

        // Three calls fit the budget; the fourth is refused and stops the container.
        await().atMost(Duration.ofSeconds(30)).until(() -> stopper.isPaused(container) && !container.isRunning());
        assertThat(charges()).containsOnlyKeys(key(1), key(2), key(3));
        assertThat(stopper.pauses("stripe")).isEqualTo(1);
        assertThat(budgets().budget("stripe").circuitBreaker().getState()).isEqualTo(State.OPEN);
        // The refused messages are back in the queue: not acknowledged, not claimed, not dead-lettered.
        // 30 s like the other waits here: one CI run timed out at 10 s on this step (cause not reproduced).
        await("the two refused messages back in the queue")
                .atMost(Duration.ofSeconds(30))
                .untilAsserted(() -> assertThat(messagesIn("charges")).isEqualTo(2));
        assertThat(store().find("charges", key(4))).isEmpty();
        assertThat(store().find("charges", key(5))).isEmpty();
        assertThat(messagesIn("charges.dlq")).isZero();

        // While the budget is exhausted the container stays stopped and nothing is consumed.
        clock().advance(Duration.ofMinutes(59));
        stopper.check();
        assertThat(container.isRunning()).isFalse();
        assertThat(messagesIn("charges")).isEqualTo(2);
        assertThat(charges()).hasSize(3);

        // The window rolls: the breaker half-opens, the container starts again, the backlog drains.
        clock().advance(Duration.ofMinutes(1));
        await().atMost(Duration.ofSeconds(30)).until(() -> charges().size() == 5);
        assertThat(charges())
                .allSatisfy((key, runs) -> assertThat(runs.get()).as(key).isEqualTo(1));
        assertThat(container.isRunning()).isTrue();
        assertThat(stopper.isPaused(container)).isFalse();
        assertThat(stopper.resumes("stripe")).isEqualTo(1);
        await("the queue drained")
                .atMost(Duration.ofSeconds(30))
                .untilAsserted(() -> assertThat(messagesIn("charges")).isZero());
        assertThat(messagesIn("charges.dlq")).isZero();
        for (int i = 1; i <= 5; i++) {
            assertThat(store().find("charges", key(i)))
                    .get()
                    .extracting(ProcessedMessage::status)
                    .isEqualTo(MessageStatus.COMPLETED);
        }
        assertThat(budgets().budget("stripe").circuitBreaker().getState()).isEqualTo(State.CLOSED);
        assertThat(meter("sumi.budget.pauses")).isEqualTo(1);
        assertThat(meter("sumi.budget.resumes")).isEqualTo(1);
    }

    /** Negative control: the same budget without the stopper; the container runs on and the refusals repeat. */
    @Test
    void withoutTheStopperTheContainerKeepsRunningAndTheRefusedMessagesComeBackAgainAndAgain() {
        start("nostop", false);
        AbstractMessageListenerContainer container = container();
        for (int i = 1; i <= 5; i++) {
            send(key(i));
        }

        await().atMost(Duration.ofSeconds(30)).until(() -> rejectedCalls() >= 4);
        assertThat(container.isRunning()).as("never stopped").isTrue();
        assertThat(charges()).containsOnlyKeys(key(1), key(2), key(3));

        // Nothing was lost either: once the window rolls the requeued messages run.
        clock().advance(Duration.ofHours(1));
        await().atMost(Duration.ofSeconds(30)).until(() -> charges().size() == 5);
        assertThat(charges())
                .allSatisfy((key, runs) -> assertThat(runs.get()).as(key).isEqualTo(1));
    }

    // ------------------------------------------------------------------ harness

    private void start(String name, boolean withStopper) {
        prefix = "sumi-rabbit-budget-it-" + RUN + "-" + name + "-";
        AnnotationConfigApplicationContext created = RabbitBinderTestWiring.context(prefix, Config.class);
        if (withStopper) {
            created.registerBean(
                    RabbitBudgetListenerStopper.class,
                    () -> new RabbitBudgetListenerStopper(
                            created.getBean(BudgetRegistry.class),
                            Duration.ofMillis(100),
                            created.getBean(SimpleMeterRegistry.class)));
        }
        context = created;
        created.refresh();
        senderConnections = TestRabbit.connectionFactory("sumi-rabbit-budget-it-" + RUN + "-sender");
    }

    private <T> T bean(Class<T> type) {
        return Objects.requireNonNull(context).getBean(type);
    }

    private AbstractMessageListenerContainer container() {
        return (AbstractMessageListenerContainer) Objects.requireNonNull(
                bean(RabbitListenerEndpointRegistry.class).getListenerContainer("charges"));
    }

    private Map<String, AtomicInteger> charges() {
        return bean(Listener.class).charges();
    }

    private BudgetRegistry budgets() {
        return bean(BudgetRegistry.class);
    }

    private MutableClock clock() {
        return bean(MutableClock.class);
    }

    private ProcessedMessageStore store() {
        return bean(ProcessedMessageStore.class);
    }

    private static String key(int i) {
        return RUN + "-order-" + i;
    }

    private void send(String key) {
        MessageProperties properties = new MessageProperties();
        properties.setContentType(MessageProperties.CONTENT_TYPE_TEXT_PLAIN);
        properties.setHeader("outbox-id", key);
        new RabbitTemplate(Objects.requireNonNull(senderConnections))
                .send(
                        "",
                        prefix + "charges",
                        new Message(("charge " + key).getBytes(StandardCharsets.UTF_8), properties));
    }

    private long messagesIn(String queue) {
        var info = bean(RabbitAdmin.class).getQueueInfo(prefix + queue);
        return info == null ? -1 : info.getMessageCount();
    }

    private double rejectedCalls() {
        Counter counter = bean(SimpleMeterRegistry.class)
                .find("sumi.budget.calls")
                .tag("budget", "stripe")
                .tag("result", "rejected")
                .counter();
        return counter == null ? 0 : counter.count();
    }

    private double meter(String name) {
        Counter counter = bean(SimpleMeterRegistry.class)
                .find(name)
                .tag("budget", "stripe")
                .counter();
        return counter == null ? 0 : counter.count();
    }

    /** The listener: one charge per message, bound to the budget {@code stripe} (3 calls an hour). */
    static class Listener {
        private final Map<String, AtomicInteger> charges = new ConcurrentHashMap<>();

        @RabbitListener(id = "charges", queues = "${it.prefix}charges")
        @IdempotentHandler(consumer = "charges", budget = "stripe")
        public void charge(String payload, @Header("outbox-id") String key) {
            charges.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
        }

        // The test sees the listener through its (class-based) proxy, whose fields are not the target's.
        Map<String, AtomicInteger> charges() {
            return charges;
        }
    }

    @Configuration(proxyBeanMethods = false)
    @EnableRabbit
    @Import({RabbitBinderTestWiring.class, RabbitBinderTestWiring.Broker.class, Budget.class})
    static class Config {

        @Bean
        SimpleRabbitListenerContainerFactory rabbitListenerContainerFactory(ConnectionFactory connectionFactory) {
            SimpleRabbitListenerContainerFactory factory = new SimpleRabbitListenerContainerFactory();
            factory.setConnectionFactory(connectionFactory);
            factory.setPrefetchCount(10);
            factory.setAcknowledgeMode(AcknowledgeMode.AUTO);
            return factory;
        }

        @Bean
        static SumiRabbitListenerContainerFactoryPostProcessor sumiContainerFactories(
                ObjectProvider<RabbitBudgetListenerStopper> stopper) {
            return new SumiRabbitListenerContainerFactoryPostProcessor(() -> BUSY_INTERVAL, stopper::getIfAvailable);
        }

        @Bean
        Listener listener() {
            return new Listener();
        }
    }

    /**
     * The run's queue {@code charges} with its dead-letter exchange and queue, the budget
     * {@code stripe} on a clock the test moves, and the executor bound to it (shared with
     * {@link RabbitBatchBudgetStopRaceIntegrationTests}).
     */
    @Configuration(proxyBeanMethods = false)
    static class Budget {

        @Bean
        Declarables queues(org.springframework.core.env.Environment environment) {
            String prefix = environment.getRequiredProperty("it.prefix");
            DirectExchange dlx = new DirectExchange(prefix + "dlx", false, false);
            Queue queue = QueueBuilder.nonDurable(prefix + "charges")
                    .deadLetterExchange(dlx.getName())
                    .deadLetterRoutingKey("charges")
                    .build();
            Queue dlq = QueueBuilder.nonDurable(prefix + "charges.dlq").build();
            return new Declarables(
                    List.of(dlx, queue, dlq, BindingBuilder.bind(dlq).to(dlx).with("charges")));
        }

        /** The budgets' clock: windows roll when the test says so. */
        @Bean
        MutableClock clock() {
            return MutableClock.at("2030-01-01T00:00:00Z");
        }

        /** An instance budget (no spend store): three calls an hour. */
        @Bean
        BudgetRegistry budgets(MutableClock clock, SimpleMeterRegistry meters) {
            return BudgetRegistry.builder()
                    .clock(clock)
                    .meterRegistry(meters)
                    .budget(
                            "stripe",
                            BudgetConfig.custom()
                                    .limit(3)
                                    .window(Duration.ofHours(1))
                                    .costPerCall(1)
                                    .build())
                    .build();
        }

        @Bean
        IdempotentExecutor executor(ProcessedMessageStore store, SimpleMeterRegistry meters, BudgetRegistry budgets) {
            return IdempotentExecutor.builder(store)
                    .meterRegistry(meters)
                    .decorator(budgets)
                    .build();
        }
    }
}
