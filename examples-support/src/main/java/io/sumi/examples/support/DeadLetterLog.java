package io.sumi.examples.support;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.kafka.support.KafkaHeaders;

/**
 * What a demo read from its dead-letter topic, so that it can count it. An example subclasses it
 * with a {@code @KafkaListener} on its dead-letter topic that calls {@link #add}.
 */
public class DeadLetterLog {

    private static final Logger log = LoggerFactory.getLogger(DeadLetterLog.class);

    private final List<ConsumerRecord<String, String>> records = new CopyOnWriteArrayList<>();

    /** Keeps {@code record} and logs where it came from and why it was dead-lettered. */
    protected void add(ConsumerRecord<String, String> record) {
        records.add(record);
        log.info(
                "Dead-lettered: {}-{}@{} key {} ({}: {})",
                header(record, KafkaHeaders.DLT_ORIGINAL_TOPIC),
                header(record, KafkaHeaders.DLT_ORIGINAL_PARTITION),
                header(record, KafkaHeaders.DLT_ORIGINAL_OFFSET),
                record.key(),
                header(record, KafkaHeaders.DLT_EXCEPTION_CAUSE_FQCN),
                header(record, KafkaHeaders.DLT_EXCEPTION_MESSAGE));
    }

    /** Every dead letter read so far, in the order read. */
    public List<ConsumerRecord<String, String>> records() {
        return List.copyOf(records);
    }

    /** How many dead letters were read so far. */
    public int count() {
        return records.size();
    }

    /** A header of a dead letter as text: strings as they are, Spring Kafka's int and long headers as numbers. */
    public static @Nullable String header(ConsumerRecord<?, ?> record, String name) {
        Header header = record.headers().lastHeader(name);
        if (header == null || header.value() == null) {
            return null;
        }
        byte[] value = header.value();
        if (name.equals(KafkaHeaders.DLT_ORIGINAL_PARTITION) && value.length == Integer.BYTES) {
            return Integer.toString(ByteBuffer.wrap(value).getInt());
        }
        if (name.equals(KafkaHeaders.DLT_ORIGINAL_OFFSET) && value.length == Long.BYTES) {
            return Long.toString(ByteBuffer.wrap(value).getLong());
        }
        return new String(value, StandardCharsets.UTF_8);
    }
}
