package io.sumi.rabbit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.UnsynchronizedAppenderBase;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sumi.budget.BudgetRegistry;
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
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongSupplier;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;
import org.springframework.amqp.core.AcknowledgeMode;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.MessageProperties;
import org.springframework.amqp.rabbit.annotation.EnableRabbit;
import org.springframework.amqp.rabbit.annotation.RabbitListener;
import org.springframework.amqp.rabbit.config.SimpleRabbitListenerContainerFactory;
import org.springframework.amqp.rabbit.connection.CachingConnectionFactory;
import org.springframework.amqp.rabbit.connection.ConnectionFactory;
import org.springframework.amqp.rabbit.core.RabbitAdmin;
import org.springframework.amqp.rabbit.core.RabbitTemplate;
import org.springframework.amqp.rabbit.listener.AbstractMessageListenerContainer;
import org.springframework.amqp.rabbit.listener.RabbitListenerEndpointRegistry;
import org.springframework.amqp.rabbit.listener.SimpleMessageListenerContainer;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;

/**
 * Commit 3fd3e8f's race, forced: a consumer batch refused by a spent budget while the
 * {@link RabbitBudgetListenerStopper} stops and starts the container.
 *
 * <p>Before that commit Sumi's requeue of the batch escaped the listener as an
 * {@code ImmediateRequeueAmqpException}, which ends a consumer-batch consumer: its thread decides to
 * restart it ({@code killOrRestart}: the consumer is still the container's and the container
 * active, so "Restarting …"), and {@code restart} then stops the old consumer (closing its channel,
 * which hands its unacknowledged deliveries back to the queue) only if the container still has a
 * consumer set. When the stopper's whole stop runs between that decision and {@code restart}, the
 * stop has cleared the set, so the old consumer is never stopped: its channel stays open with the
 * messages the broker had delivered to it (the rest of the prefetch, the requeued batch) unacknowledged, and after the
 * resume they never come back. With the fix the batch's exception is a
 * {@code ListenerExecutionFailedException}, the consumer is kept, takes the next batch, and the
 * stop closes it as usual.
 *
 * <p>Hooks, no sleeping: the stopper's stop is held until the consumer thread has either decided
 * to restart (held there by an appender on the container's "Restarting" log line, the only point
 * between that decision and {@code restart}) or run a second batch (it was kept); the stop then
 * runs to its end, the restart goes on, and the budget's window rolls. Every held message must run
 * once after the resume. The first held batch waits until the broker has delivered every held
 * message to the consumer (so a message is on its channel when the race is decided).
 */
class RabbitBatchBudgetStopRaceIntegrationTests {

    static final String RUN = UUID.randomUUID().toString().substring(0, 8);
    static final Duration BOUND = Duration.ofSeconds(60);

    private @Nullable AnnotationConfigApplicationContext context;
    private @Nullable CachingConnectionFactory senderConnections;
    private final RestartHook restartHook = new RestartHook();
    private final Logger containerLog = (Logger) LoggerFactory.getLogger(SimpleMessageListenerContainer.class);
    private @Nullable Level containerLogLevel;
    private String prefix = "";

    @AfterEach
    void cleanUp() {
        restartHook.release();
        containerLog.detachAppender(restartHook);
        containerLog.setLevel(containerLogLevel);
        restartHook.stop();
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
    void
            aBatchRefusedByASpentBudgetRunsAfterTheResumeWhenTheStopperStopsBetweenTheConsumersRestartDecisionAndItsRestart()
                    throws InterruptedException {
        start();
        HeldStopper stopper = bean(HeldStopper.class);
        FirstHeldRun runs = bean(FirstHeldRun.class);
        AbstractMessageListenerContainer container = container();

        // The budget allows three calls an hour: three paid messages spend it.
        for (int i = 1; i <= 3; i++) {
            send(key("paid", i));
        }
        await().atMost(BOUND).until(() -> charges().size() == 3);

        // Three held messages, in the queue before the consumer starts (so the broker delivers all of
        // them to it): the first batch (at most two) is refused and Sumi pauses the container; the
        // stopper's stop is held.
        container.stop();
        for (int i = 1; i <= 3; i++) {
            send(key("held", i));
        }
        await().atMost(BOUND).until(() -> readyIn("charges") == 3);
        runs.arm(() -> readyIn("charges"));
        container.start();
        await().atMost(BOUND).until(() -> stopper.isPaused(container));
        // Either the consumer decided to restart (the old code; held on that decision) or it was kept
        // and took the next batch (the fix; still refused, the budget is spent).
        await().atMost(BOUND).until(() -> restartHook.reached() || runs.count() >= 2);
        boolean restarting = restartHook.reached();

        // The stopper's stop runs to its end, then the consumer thread goes on (its restart, if any).
        stopper.releaseStop();
        assertThat(stopper.awaitStopped())
                .as("the stopper stopped the container")
                .isTrue();
        restartHook.release();
        assertThat(charges()).as("nothing held ran on the spent budget").hasSize(3);

        // The window rolls: the breaker half-opens, the stopper starts the container again.
        clock().advance(Duration.ofHours(1));
        await().atMost(Duration.ofSeconds(30))
                .untilAsserted(() -> assertThat(charges())
                        .as(
                                "the held messages ran after the resume (the consumer %s)",
                                restarting ? "was restarted" : "was kept")
                        .containsKeys(key("held", 1), key("held", 2), key("held", 3)));
        assertThat(charges()).allSatisfy((key, n) -> assertThat(n.get()).as(key).isEqualTo(1));
        for (int i = 1; i <= 3; i++) {
            assertThat(store().find("charges", key("held", i)))
                    .get()
                    .extracting(ProcessedMessage::status)
                    .isEqualTo(MessageStatus.COMPLETED);
        }
        await().atMost(BOUND).until(() -> readyIn("charges") == 0);
        assertThat(readyIn("charges.dlq")).isZero();
        assertThat(restarting)
                .as("the consumer was restarted after the refusal (no longer: it is kept)")
                .isFalse();
    }

    // ------------------------------------------------------------------ hooks

    /**
     * The stopper whose stop of the container waits for {@link #releaseStop}, on the stopper's
     * thread as always; its start is the stopper's own.
     */
    static class HeldStopper extends RabbitBudgetListenerStopper {
        private final CountDownLatch release = new CountDownLatch(1);
        private final CountDownLatch stopped = new CountDownLatch(1);

        HeldStopper(BudgetRegistry budgets, SimpleMeterRegistry meters) {
            super(budgets, Duration.ofMillis(100), meters);
        }

        @Override
        protected void pauseListener(AbstractMessageListenerContainer container) {
            runInBackground(() -> {
                hold(release);
                container.stop();
                stopped.countDown();
            });
        }

        void releaseStop() {
            release.countDown();
        }

        boolean awaitStopped() throws InterruptedException {
            return stopped.await(BOUND.toSeconds(), TimeUnit.SECONDS);
        }
    }

    /**
     * Holds the consumer thread on the container's "Restarting …" line, logged after the consumer
     * thread decided to restart its consumer and before {@code restart} looks at the consumer set.
     */
    static final class RestartHook extends UnsynchronizedAppenderBase<ILoggingEvent> {
        private final CountDownLatch reached = new CountDownLatch(1);
        private final CountDownLatch release = new CountDownLatch(1);

        @Override
        protected void append(ILoggingEvent event) {
            if (event.getFormattedMessage().startsWith("Restarting Consumer@") && reached.getCount() > 0) {
                reached.countDown();
                hold(release);
            }
        }

        boolean reached() {
            return reached.getCount() == 0;
        }

        void release() {
            release.countDown();
        }
    }

    /**
     * An advice of the container factory (inside Sumi's outer one): counts the runs of held batches
     * once armed; the first waits until the broker has delivered every held message (none ready).
     */
    static final class FirstHeldRun implements MethodInterceptor {
        private final AtomicInteger runs = new AtomicInteger();
        private final AtomicBoolean armed = new AtomicBoolean();
        private volatile LongSupplier ready = () -> 0;

        void arm(LongSupplier readyMessages) {
            ready = readyMessages;
            armed.set(true);
        }

        int count() {
            return runs.get();
        }

        @Override
        public @Nullable Object invoke(MethodInvocation invocation) throws Throwable {
            if (armed.get() && runs.incrementAndGet() == 1) {
                await().atMost(BOUND).until(() -> ready.getAsLong() == 0);
            }
            return invocation.proceed();
        }
    }

    private static void hold(CountDownLatch latch) {
        try {
            if (!latch.await(BOUND.toSeconds(), TimeUnit.SECONDS)) {
                throw new IllegalStateException("a hook of the test was never released");
            }
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
    }

    // ------------------------------------------------------------------ harness

    private void start() {
        prefix = "sumi-rabbit-budget-race-it-" + RUN + "-";
        containerLogLevel = containerLog.getLevel();
        containerLog.setLevel(Level.INFO);
        restartHook.setContext(containerLog.getLoggerContext());
        restartHook.start();
        containerLog.addAppender(restartHook);
        AnnotationConfigApplicationContext created = RabbitBinderTestWiring.context(prefix, Config.class);
        context = created;
        created.refresh();
        senderConnections = TestRabbit.connectionFactory(prefix + "sender");
    }

    private <T> T bean(Class<T> type) {
        return Objects.requireNonNull(context).getBean(type);
    }

    private AbstractMessageListenerContainer container() {
        return (AbstractMessageListenerContainer) Objects.requireNonNull(
                bean(RabbitListenerEndpointRegistry.class).getListenerContainer("race-charges"));
    }

    private Map<String, AtomicInteger> charges() {
        return bean(Listener.class).charges();
    }

    private MutableClock clock() {
        return bean(MutableClock.class);
    }

    private ProcessedMessageStore store() {
        return bean(ProcessedMessageStore.class);
    }

    private static String key(String kind, int i) {
        return RUN + "-" + kind + "-" + i;
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

    /** The messages of {@code queue} ready for delivery (not delivered to a consumer). */
    private long readyIn(String queue) {
        var info = bean(RabbitAdmin.class).getQueueInfo(prefix + queue);
        return info == null ? -1 : info.getMessageCount();
    }

    /** A consumer-batch listener: one charge per message, bound to the budget {@code stripe}. */
    static class Listener {
        private final Map<String, AtomicInteger> charges = new ConcurrentHashMap<>();

        @RabbitListener(id = "race-charges", queues = "${it.prefix}charges")
        @IdempotentHandler(consumer = "charges", budget = "stripe")
        public void charge(List<Message> messages) {
            for (Message message : messages) {
                String key =
                        (String) message.getMessageProperties().getHeaders().get("outbox-id");
                charges.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
            }
        }

        // The test sees the listener through its (class-based) proxy, whose fields are not the target's.
        Map<String, AtomicInteger> charges() {
            return charges;
        }
    }

    @Configuration(proxyBeanMethods = false)
    @EnableRabbit
    @Import({
        RabbitBinderTestWiring.class,
        RabbitBinderTestWiring.Broker.class,
        RabbitBudgetStopIntegrationTests.Budget.class
    })
    static class Config {

        @Bean
        FirstHeldRun firstHeldRun() {
            return new FirstHeldRun();
        }

        /** Consumer batches of at most two, every message of the queue prefetched by the one consumer. */
        @Bean
        SimpleRabbitListenerContainerFactory rabbitListenerContainerFactory(
                ConnectionFactory connectionFactory, FirstHeldRun firstHeldRun) {
            SimpleRabbitListenerContainerFactory factory = new SimpleRabbitListenerContainerFactory();
            factory.setConnectionFactory(connectionFactory);
            factory.setAcknowledgeMode(AcknowledgeMode.AUTO);
            factory.setBatchListener(true);
            factory.setConsumerBatchEnabled(true);
            factory.setBatchSize(2);
            factory.setPrefetchCount(10);
            factory.setReceiveTimeout(200L);
            factory.setAdviceChain(firstHeldRun);
            return factory;
        }

        @Bean
        static SumiRabbitListenerContainerFactoryPostProcessor sumiContainerFactories(
                ObjectProvider<RabbitBudgetListenerStopper> stopper) {
            return new SumiRabbitListenerContainerFactoryPostProcessor(
                    () -> Duration.ofMillis(200), stopper::getIfAvailable);
        }

        @Bean
        HeldStopper stopper(BudgetRegistry budgets, SimpleMeterRegistry meters) {
            return new HeldStopper(budgets, meters);
        }

        @Bean
        Listener listener() {
            return new Listener();
        }
    }
}
