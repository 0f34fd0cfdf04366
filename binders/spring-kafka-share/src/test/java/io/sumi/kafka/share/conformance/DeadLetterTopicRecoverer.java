package io.sumi.kafka.share.conformance;

import io.sumi.consumer.exception.FingerprintMismatchException;
import io.sumi.consumer.exception.InvalidIdempotencyKeyException;
import io.sumi.consumer.exception.MissingIdempotencyKeyException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.listener.ShareConsumerRecordRecoverer;

/**
 * The catalogue application's dead-letter path for its share containers, as
 * docs/kafka-share-groups.md advises one ("give such a group a recoverer that publishes to a
 * dead-letter topic"): a record that cannot run (no key, an invalid key, a rejected fingerprint:
 * Sumi hands these to the application's recoverer) and a failed handler's record at its last
 * delivery are published to {@code <topic>-dlt} and rejected; an earlier failure is released
 * (delivered again). Without the publish at the limit the broker would archive the record
 * silently, which is a loss no scenario could see.
 */
final class DeadLetterTopicRecoverer implements ShareConsumerRecordRecoverer {

    static final String EXCEPTION_HEADER = "catalogue-dlt-exception";

    private final KafkaTemplate<String, String> template;

    DeadLetterTopicRecoverer(KafkaTemplate<String, String> template) {
        this.template = template;
    }

    @Override
    public AcknowledgeType recover(ConsumerRecord<?, ?> record, Exception failure) {
        int delivery = record.deliveryCount().map(Short::intValue).orElse(ShareCatalogueKafka.DELIVERY_LIMIT);
        if (!cannotRun(failure) && delivery < ShareCatalogueKafka.DELIVERY_LIMIT) {
            return AcknowledgeType.RELEASE;
        }
        ProducerRecord<String, String> dead =
                new ProducerRecord<>(record.topic() + "-dlt", (String) record.key(), (String) record.value());
        record.headers().forEach(header -> dead.headers().add(header));
        dead.headers().add(EXCEPTION_HEADER, describe(failure).getBytes(StandardCharsets.UTF_8));
        try {
            template.send(dead).get(30, TimeUnit.SECONDS);
        } catch (Exception ex) {
            // Not published: released (at the limit the broker archives it, and the scenario that
            // waits for its dead letter fails, naming it).
            return AcknowledgeType.RELEASE;
        }
        return AcknowledgeType.REJECT;
    }

    private static boolean cannotRun(Throwable failure) {
        for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
            if (cause instanceof MissingIdempotencyKeyException
                    || cause instanceof InvalidIdempotencyKeyException
                    || cause instanceof FingerprintMismatchException) {
                return true;
            }
        }
        return false;
    }

    private static String describe(Throwable failure) {
        StringBuilder text = new StringBuilder();
        for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
            text.append(cause.getClass().getName())
                    .append(": ")
                    .append(cause.getMessage())
                    .append(" | ");
        }
        return text.toString();
    }
}
