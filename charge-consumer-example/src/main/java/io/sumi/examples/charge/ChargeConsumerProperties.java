package io.sumi.examples.charge;

import java.net.URI;
import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * The example's settings, under {@code charge-consumer}.
 *
 * @param topic the topic charge requests arrive on
 * @param partitions partitions of the topic and of its dead-letter topic, when the application creates them
 * @param providerUrl the payment provider's base URL ({@code POST <url>/v1/charges})
 * @param retry how a failed charge is retried before it is dead-lettered
 */
@ConfigurationProperties("charge-consumer")
public record ChargeConsumerProperties(
        @DefaultValue("payment.charge") String topic,
        @DefaultValue("3") int partitions,
        @DefaultValue("http://127.0.0.1:12111") URI providerUrl,
        @DefaultValue Retry retry) {

    /** The dead-letter topic: Spring Kafka's default name. */
    public String deadLetterTopic() {
        return topic + "-dlt";
    }

    /**
     * How a failed charge is retried.
     *
     * @param interval time between attempts
     * @param maxAttempts attempts in all before the record is dead-lettered
     */
    public record Retry(
            @DefaultValue("1s") Duration interval,
            @DefaultValue("10") int maxAttempts) {}
}
