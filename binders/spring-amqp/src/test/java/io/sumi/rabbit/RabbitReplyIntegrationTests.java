package io.sumi.rabbit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Channel;
import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentHandler;
import io.sumi.store.MessageStatus;
import io.sumi.store.ProcessedMessageStore;
import io.sumi.testing.RunCounter;
import io.sumi.testing.TestRabbit;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.amqp.core.AcknowledgeMode;
import org.springframework.amqp.core.Declarables;
import org.springframework.amqp.core.QueueBuilder;
import org.springframework.amqp.rabbit.annotation.EnableRabbit;
import org.springframework.amqp.rabbit.annotation.RabbitListener;
import org.springframework.amqp.rabbit.config.SimpleRabbitListenerContainerFactory;
import org.springframework.amqp.rabbit.connection.CachingConnectionFactory;
import org.springframework.amqp.rabbit.connection.ConnectionFactory;
import org.springframework.amqp.rabbit.core.RabbitTemplate;
import org.springframework.amqp.support.AmqpHeaders;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.messaging.handler.annotation.Header;

/**
 * {@code @IdempotentHandler(storeReply = true)} on {@code @RabbitListener} methods that return a
 * reply, against the real RabbitMQ (127.0.0.1:5672) and the local PostgreSQL: a request sent twice
 * with {@link RabbitTemplate#convertSendAndReceive} and the same {@code outbox-id} gets the same
 * reply twice while the handler runs once (lease and transactional mode); without
 * {@code storeReply} the duplicate's requester gets nothing (the negative control).
 */
class RabbitReplyIntegrationTests {

    static final String RUN = UUID.randomUUID().toString().substring(0, 8);
    static final String PREFIX = "sumi-rabbit-reply-it-" + RUN + "-";
    static final List<String> QUEUES = List.of("lease", "tx", "off", "manual");

    static AnnotationConfigApplicationContext context;
    static CachingConnectionFactory senderConnections;
    static RabbitTemplate requester;
    static RunCounter runs;
    static ProcessedMessageStore store;

    @BeforeAll
    static void start() {
        context = RabbitBinderTestWiring.context(PREFIX, Config.class);
        context.refresh();
        senderConnections = TestRabbit.connectionFactory("sumi-rabbit-reply-it-" + RUN + "-requester");
        requester = new RabbitTemplate(senderConnections);
        // Direct reply-to (the default): each call has its own correlation id.
        requester.setReplyTimeout(10_000);
        runs = context.getBean(RunCounter.class);
        store = context.getBean(ProcessedMessageStore.class);
    }

    @AfterAll
    static void cleanUp() {
        RabbitBinderTestWiring.cleanUp(
                context, RUN, QUEUES.stream().map(queue -> PREFIX + queue).toList(), List.of());
        if (senderConnections != null) {
            senderConnections.destroy();
        }
    }

    static @Nullable Object ask(String queue, String key, String payload) {
        return requester.convertSendAndReceive("", PREFIX + queue, payload, message -> {
            message.getMessageProperties().setHeader("outbox-id", key);
            return message;
        });
    }

    @Test
    void aDuplicatedRequestGetsTheSameReplyWhileTheHandlerRunsOnceInLeaseMode() {
        Object first = ask("lease", RUN + "-1", "ping");
        Object second = ask("lease", RUN + "-1", "ping");

        assertThat(first).isEqualTo("pong:ping:run-1");
        assertThat(second).isEqualTo(first);
        assertThat(runs.of("lease")).isEqualTo(1);
        assertThat(store.findReply("reply-lease", RUN + "-1")).isPresent();
    }

    @Test
    void aDuplicatedRequestGetsTheSameReplyWhileTheHandlerRunsOnceInTransactionalMode() {
        Object first = ask("tx", RUN + "-2", "ping");
        Object second = ask("tx", RUN + "-2", "ping");

        assertThat(first).isEqualTo("pong:ping:run-1");
        assertThat(second).isEqualTo(first);
        assertThat(runs.of("tx")).isEqualTo(1);
    }

    /** The negative control: without storeReply the duplicate is skipped and its requester gets nothing. */
    @Test
    void withoutStoreReplyTheDuplicateGetsNoReply() {
        requester.setReplyTimeout(3_000);
        try {
            assertThat(ask("off", RUN + "-3", "ping")).isEqualTo("pong:ping:run-1");
            assertThat(ask("off", RUN + "-3", "ping")).isNull();
        } finally {
            requester.setReplyTimeout(10_000);
        }
        assertThat(runs.of("off")).isEqualTo(1);
    }

    /**
     * A MANUAL listener that keeps its reply, nacks its first delivery with requeue and returns a
     * value: the nack makes the message not done (the redelivery runs), and the kept reply is the
     * one of the run that completed.
     */
    @Test
    void aNackedDeliveryOfAListenerThatKeepsItsReplyIsNotDoneAndTheRedeliveryKeepsItsReply() {
        String key = RUN + "-4";
        // The container sends what the nacked run returned, as it sends any reply; a listener
        // failure inside Sumi (a reply that cannot be kept) would leave the requester without one.
        assertThat(ask("manual", key, "ping")).as("the nacked run's reply").isEqualTo("pong:ping:run-1");

        await().atMost(Duration.ofSeconds(30))
                .until(() -> store.find("reply-manual", key)
                        .map(row -> row.status() == MessageStatus.COMPLETED)
                        .orElse(false));
        assertThat(runs.of("manual")).isEqualTo(2);
        assertThat(store.findReply("reply-manual", key)).isPresent();
        assertThat(ask("manual", key, "ping")).as("the duplicate's reply").isEqualTo("pong:ping:run-2");
        assertThat(runs.of("manual")).isEqualTo(2);
    }

    static class Listeners {

        private final RunCounter runs;

        Listeners(RunCounter runs) {
            this.runs = runs;
        }

        @RabbitListener(id = "reply-lease", queues = "${it.prefix}lease")
        @IdempotentHandler(mode = IdempotencyMode.LEASE, storeReply = true)
        public String lease(String request) {
            return "pong:" + request + ":run-" + runs.next("lease");
        }

        @RabbitListener(id = "reply-tx", queues = "${it.prefix}tx")
        @IdempotentHandler(mode = IdempotencyMode.TRANSACTIONAL, storeReply = true)
        public String transactional(String request) {
            return "pong:" + request + ":run-" + runs.next("tx");
        }

        @RabbitListener(id = "reply-manual", queues = "${it.prefix}manual", ackMode = "MANUAL")
        @IdempotentHandler(mode = IdempotencyMode.LEASE, storeReply = true)
        public String manual(String request, Channel channel, @Header(AmqpHeaders.DELIVERY_TAG) long tag)
                throws IOException {
            int run = runs.next("manual");
            if (run == 1) {
                channel.basicNack(tag, false, true);
            } else {
                channel.basicAck(tag, false);
            }
            return "pong:" + request + ":run-" + run;
        }

        @RabbitListener(id = "reply-off", queues = "${it.prefix}off")
        @IdempotentHandler(mode = IdempotencyMode.LEASE)
        public String off(String request) {
            return "pong:" + request + ":run-" + runs.next("off");
        }
    }

    @Configuration(proxyBeanMethods = false)
    @EnableRabbit
    @Import({SumiRabbitTestBeans.class, RabbitBinderTestWiring.Broker.class})
    static class Config {

        @Bean
        Declarables queues() {
            List<org.springframework.amqp.core.Declarable> declarables = new ArrayList<>();
            for (String name : QUEUES) {
                declarables.add(QueueBuilder.nonDurable(PREFIX + name).build());
            }
            return new Declarables(declarables);
        }

        @Bean
        SimpleRabbitListenerContainerFactory rabbitListenerContainerFactory(ConnectionFactory connectionFactory) {
            SimpleRabbitListenerContainerFactory factory = new SimpleRabbitListenerContainerFactory();
            factory.setConnectionFactory(connectionFactory);
            factory.setAcknowledgeMode(AcknowledgeMode.AUTO);
            return factory;
        }

        @Bean
        RunCounter runs() {
            return new RunCounter();
        }

        @Bean
        Listeners listeners(RunCounter runs) {
            return new Listeners(runs);
        }
    }
}
