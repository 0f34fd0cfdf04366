package io.sumi.examples.mail;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sumi.examples.support.DemoLauncher;
import org.apache.kafka.clients.admin.NewTopic;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.kafka.config.TopicBuilder;
import org.springframework.kafka.core.KafkaAdmin;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.listener.DeadLetterPublishingRecoverer;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.mail.javamail.JavaMailSender;
import org.springframework.util.backoff.FixedBackOff;

/**
 * A Kafka consumer that sends mail over SMTP, made idempotent with Sumi, and the order service
 * that feeds it through Sumi's transactional outbox ({@link io.sumi.examples.mail.orders.OrderService}:
 * order rows and the outbox row of the confirmation mail in one transaction; the starter's outbox
 * dispatcher publishes the rows).
 *
 * <p>Started without configuration it runs the demo (see {@code io.sumi.examples.mail.demo}):
 * in-process Kafka, PostgreSQL and SMTP, a few thousand orders, copies of their mail requests on
 * the broker, a summary, exit. Pointed at real services with the usual Spring properties
 * ({@code spring.kafka.bootstrap-servers}, {@code spring.datasource.*}, {@code spring.mail.*}) it is
 * an ordinary long-running service.
 */
@SpringBootApplication
@EnableConfigurationProperties(MailConsumerProperties.class)
public class MailConsumerApplication {

    /** Runs the demo and exits when no services are configured (see {@link DemoLauncher}); otherwise runs as a service. */
    public static void main(String[] args) {
        DemoLauncher.run(MailConsumerApplication.class, args);
    }

    /** The topic the mails come from, and its dead-letter topic (Spring Kafka's default name: {@code <topic>-dlt}). */
    @Bean
    KafkaAdmin.NewTopics mailTopics(MailConsumerProperties properties) {
        NewTopic topic = TopicBuilder.name(properties.topic())
                .partitions(properties.partitions())
                .build();
        // The recoverer publishes to the failed record's partition number: the DLT needs as many partitions.
        NewTopic deadLetters = TopicBuilder.name(properties.deadLetterTopic())
                .partitions(properties.partitions())
                .build();
        return new KafkaAdmin.NewTopics(topic, deadLetters);
    }

    /**
     * Retries a failed send a few times, then dead-letters it. Sumi's starter adds its own
     * classification to this bean: a message without a key goes to the DLT at once, and a key
     * that another consumer thread is sending right now (BUSY) is retried until that one is done.
     */
    @Bean
    DefaultErrorHandler mailErrorHandler(KafkaTemplate<Object, Object> template, MailConsumerProperties properties) {
        MailConsumerProperties.Retry retry = properties.retry();
        DefaultErrorHandler handler = new DefaultErrorHandler(
                new DeadLetterPublishingRecoverer(template),
                new FixedBackOff(retry.interval().toMillis(), Math.max(0, retry.maxAttempts() - 1)));
        handler.addNotRetryableExceptions(InvalidMailRequestException.class);
        return handler;
    }

    @Bean
    SmtpMailGateway smtpMailGateway(ObjectProvider<JavaMailSender> mailSender, MailConsumerProperties properties) {
        JavaMailSender sender = mailSender.getIfAvailable();
        if (sender == null) {
            throw new IllegalStateException("No SMTP server is configured: set spring.mail.host (and spring.mail.port,"
                    + " spring.mail.username, spring.mail.password as needed), or run without spring.kafka.bootstrap-servers"
                    + " and spring.datasource.url for the self-contained demo");
        }
        return new SmtpMailGateway(sender, properties.from(), properties.messageIdDomain());
    }

    /** Sumi's counters ({@code sumi.messages}) need a registry; with Actuator, use its registry instead. */
    @Bean
    @ConditionalOnMissingBean(MeterRegistry.class)
    SimpleMeterRegistry meterRegistry() {
        return new SimpleMeterRegistry();
    }
}
