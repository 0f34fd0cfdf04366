package io.sumi.examples.charge;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sumi.examples.support.DemoLauncher;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.kafka.config.TopicBuilder;
import org.springframework.kafka.core.KafkaAdmin;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.listener.DeadLetterPublishingRecoverer;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.util.backoff.FixedBackOff;
import org.springframework.web.client.RestClient;

/**
 * A Kafka consumer that charges cards through an HTTP payment provider, made idempotent and
 * budgeted with Sumi.
 *
 * <p>Started without configuration it runs the demo (see {@code io.sumi.examples.charge.demo}):
 * in-process Kafka, PostgreSQL and payment provider, crashes between the charge and the ledger,
 * a provider outage whose retries run into the budget, a summary, exit. Pointed at real services
 * ({@code spring.kafka.bootstrap-servers}, {@code spring.datasource.*},
 * {@code charge-consumer.provider-url}) it is an ordinary long-running consumer.
 */
@SpringBootApplication
@EnableConfigurationProperties(ChargeConsumerProperties.class)
public class ChargeConsumerApplication {

    /** Runs the demo and exits when no services are configured (see {@link DemoLauncher}); otherwise runs as a service. */
    public static void main(String[] args) {
        DemoLauncher.run(ChargeConsumerApplication.class, args);
    }

    @Bean
    KafkaAdmin.NewTopics chargeTopics(ChargeConsumerProperties properties) {
        return new KafkaAdmin.NewTopics(
                TopicBuilder.name(properties.topic())
                        .partitions(properties.partitions())
                        .build(),
                TopicBuilder.name(properties.deadLetterTopic())
                        .partitions(properties.partitions())
                        .build());
    }

    /**
     * Retries a failed charge, then dead-letters it; a declined card or an unreadable request goes
     * to the dead-letter topic at once. Sumi adds its own rules: a busy key is retried until the
     * other consumer is done, an uncertain outcome is dead-lettered, and a budget refusal never
     * reaches this handler (the container is paused instead).
     */
    @Bean
    DefaultErrorHandler chargeErrorHandler(
            KafkaTemplate<Object, Object> template, ChargeConsumerProperties properties) {
        ChargeConsumerProperties.Retry retry = properties.retry();
        DefaultErrorHandler handler = new DefaultErrorHandler(
                new DeadLetterPublishingRecoverer(template),
                new FixedBackOff(retry.interval().toMillis(), Math.max(0, retry.maxAttempts() - 1)));
        handler.addNotRetryableExceptions(InvalidChargeRequestException.class, PaymentDeclinedException.class);
        return handler;
    }

    /** The provider's client, built from Boot's builder, which carries Sumi's Idempotency-Key interceptor. */
    @Bean
    PaymentGateway paymentGateway(RestClient.Builder builder, ChargeConsumerProperties properties) {
        return new PaymentGateway(
                builder.baseUrl(properties.providerUrl().toString()).build());
    }

    /** Sumi's meters ({@code sumi.messages}, {@code sumi.budget.*}) need a registry; with Actuator, use its registry. */
    @Bean
    @ConditionalOnMissingBean(MeterRegistry.class)
    SimpleMeterRegistry meterRegistry() {
        return new SimpleMeterRegistry();
    }
}
