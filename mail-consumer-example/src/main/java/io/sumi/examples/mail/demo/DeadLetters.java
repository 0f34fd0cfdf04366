package io.sumi.examples.mail.demo;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.support.KafkaHeaders;

/** Reads the dead-letter topic, so that the demo can count what reached it. */
public class DeadLetters {

    /** The listener id, and so its consumer group. */
    public static final String ID = "mail-demo-dead-letters";

    private static final Logger log = LoggerFactory.getLogger(DeadLetters.class);

    private final List<ConsumerRecord<String, String>> records = Collections.synchronizedList(new ArrayList<>());

    @KafkaListener(id = ID, topics = "${mail-consumer.topic:mail.send}-dlt", concurrency = "1")
    public void onDeadLetter(ConsumerRecord<String, String> record) {
        records.add(record);
        log.info("Dead-lettered: {}-{}@{} ({}: {})", header(record, KafkaHeaders.DLT_ORIGINAL_TOPIC),
                header(record, KafkaHeaders.DLT_ORIGINAL_PARTITION), header(record, KafkaHeaders.DLT_ORIGINAL_OFFSET),
                header(record, KafkaHeaders.DLT_EXCEPTION_CAUSE_FQCN), header(record, KafkaHeaders.DLT_EXCEPTION_MESSAGE));
    }

    /** A header of a dead letter as text: strings as they are, Spring Kafka's int and long headers as numbers. */
    public static String header(ConsumerRecord<?, ?> record, String name) {
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

    public List<ConsumerRecord<String, String>> records() {
        synchronized (records) {
            return List.copyOf(records);
        }
    }
}
