package io.sumi.examples.mail;

import static org.assertj.core.api.Assertions.assertThat;

import io.sumi.examples.mail.demo.DemoReport;
import io.sumi.examples.mail.demo.MailDemo;
import io.sumi.testing.TestRabbit;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.amqp.core.AmqpAdmin;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.context.ActiveProfiles;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The demo's {@code rabbitmq} mode end to end against the real RabbitMQ (127.0.0.1:5672): the
 * outbox publishes the mail requests to RabbitMQ with confirms, a {@code @RabbitListener} with three
 * consumers sends the mails, the demo adds copies and keyless messages on RabbitMQ, and the summary
 * must say every committed order was mailed exactly once. The topic (exchange, queue) is named
 * after the run and deleted afterwards.
 */
@SpringBootTest(
        classes = MailConsumerApplication.class,
        properties = {
            "sumi.demo.orders=200",
            "sumi.demo.rolled-back-orders=2",
            "sumi.demo.failing-orders=5",
            "sumi.demo.poison-messages=2",
            "sumi.demo.timeout=90s"
        })
@ActiveProfiles("rabbitmq")
class RabbitMailDemoIntegrationTests {

    static final String TOPIC = "mail.send.it-" + UUID.randomUUID().toString().substring(0, 8);

    static AmqpAdmin admin;

    @DynamicPropertySource
    static void topic(DynamicPropertyRegistry registry) {
        registry.add("mail-consumer.topic", () -> TOPIC);
    }

    @BeforeAll
    static void broker() {
        TestRabbit.requireBroker();
    }

    @AfterAll
    static void cleanUp() {
        if (admin != null) {
            admin.deleteQueue(TOPIC);
            admin.deleteQueue(TOPIC + ".dlq");
            admin.deleteExchange(TOPIC);
            admin.deleteExchange(TOPIC + ".dlx");
        }
    }

    @Autowired
    MailDemo demo;

    @Autowired
    org.springframework.context.ApplicationContext context;

    @Autowired
    void remember(AmqpAdmin amqpAdmin) {
        admin = amqpAdmin;
    }

    @Test
    void theOutboxFeedsTheRabbitListenerAndEveryCommittedOrderIsMailedExactlyOnce() throws Exception {
        // The Kafka listener is off in this mode; the RabbitMQ publisher is there (the demo wraps publishers).
        assertThat(context.getBeansOfType(MailListener.class)).isEmpty();
        assertThat(context.getBean(RabbitMailListener.class)).isNotNull();
        assertThat(context.containsBean("sumiRabbitOutboxPublisher")).isTrue();

        DemoReport report = demo.run();

        System.out.println(report.format());
        assertThat(report.timedOut()).isFalse();
        assertThat(report.everyOrderMailedOnce()).as(report.format()).isTrue();
        assertThat(report.rolledBackLeftNothing()).isTrue();
        assertThat(report.outboxDrained()).isTrue();
        assertThat(report.poisonDeadLettered()).isTrue();
        assertThat(report.broker().copies()).as("duplicates were delivered").isPositive();
        assertThat(report.consumer().duplicatesSkipped())
                .isGreaterThanOrEqualTo(report.broker().copies());
        assertThat(report.ok()).isTrue();
    }
}
