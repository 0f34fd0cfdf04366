package io.sumi.examples.mail;

import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * The example's own settings, under {@code mail-consumer}.
 *
 * @param topic the topic of mail requests
 * @param partitions the partitions of the topic and its DLT, when this application creates them
 * @param from the sender address of every mail
 * @param messageIdDomain the right-hand side of the {@code Message-ID} derived from the idempotency key
 * @param retry how a failed send is retried before it is dead-lettered
 */
@ConfigurationProperties("mail-consumer")
public record MailConsumerProperties(
        @DefaultValue("mail.send") String topic,
        @DefaultValue("3") int partitions,
        @DefaultValue("noreply@example.com") String from,
        @DefaultValue("mail-consumer.sumi.example") String messageIdDomain,
        @DefaultValue Retry retry) {

    /** The dead-letter topic: Spring Kafka's default name for {@link #topic()}. */
    public String deadLetterTopic() {
        return topic + "-dlt";
    }

    /**
     * How a failed mail is retried.
     *
     * @param interval the pause between two attempts
     * @param maxAttempts deliveries of a message whose send fails, the first included
     */
    public record Retry(
            @DefaultValue("1s") Duration interval,
            @DefaultValue("4") int maxAttempts) {}
}
