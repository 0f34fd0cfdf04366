package io.sumi.kafka.share.conformance;

import io.sumi.conformance.Work;
import java.nio.charset.StandardCharsets;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;
import org.jspecify.annotations.Nullable;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.transaction.annotation.Transactional;

/**
 * The negative controls: share-group listeners without Sumi, on the same factories (and so the same
 * dead-letter recoverer), and the ordinary consumer that reads every dead-letter topic back into
 * {@link Work}.
 */
public class PlainShareListeners {

    private final Work work;

    public PlainShareListeners(Work work) {
        this.work = work;
    }

    static @Nullable String keyHeader(ConsumerRecord<?, ?> record) {
        Header header = record.headers().lastHeader("idempotency-key");
        return header == null ? null : new String(header.value(), StandardCharsets.UTF_8);
    }

    @KafkaListener(
            id = "kafka-share-plain",
            groupId = "kafka-share-plain",
            topics = "cat.share.plain",
            containerFactory = "shareFactory")
    public void plain(ConsumerRecord<String, String> record) {
        work.run(record.value(), keyHeader(record), false);
    }

    @KafkaListener(
            id = "kafka-share-plain-held",
            groupId = "kafka-share-plain-held",
            topics = "cat.share.plain-held",
            containerFactory = "shareFactory")
    public void plainHeld(ConsumerRecord<String, String> record) {
        work.run(record.value(), keyHeader(record), false);
    }

    @KafkaListener(
            id = "kafka-share-plain-tx",
            groupId = "kafka-share-plain-tx",
            topics = "cat.share.plain-tx",
            containerFactory = "shareFactory")
    @Transactional
    public void plainTx(ConsumerRecord<String, String> record) {
        work.run(record.value(), keyHeader(record), true);
    }

    /** Every catalogue share topic's dead letters, on an ordinary consumer group. */
    @KafkaListener(id = "share-catalogue-dead-letters", topicPattern = "cat\\.share\\..*-dlt")
    public void deadLetter(ConsumerRecord<String, String> record) {
        Header exception = record.headers().lastHeader(DeadLetterTopicRecoverer.EXCEPTION_HEADER);
        work.deadLettered(
                record.value(), exception == null ? null : new String(exception.value(), StandardCharsets.UTF_8));
    }
}
