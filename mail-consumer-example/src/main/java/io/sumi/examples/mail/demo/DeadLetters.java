package io.sumi.examples.mail.demo;

import io.sumi.examples.support.DeadLetterLog;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.springframework.kafka.annotation.KafkaListener;

/** Reads the dead-letter topic, so that the demo can count what reached it. */
public class DeadLetters extends DeadLetterLog {

    /** The listener id, and so its consumer group. */
    public static final String ID = "mail-demo-dead-letters";

    @KafkaListener(id = ID, topics = "${mail-consumer.topic:mail.send}-dlt", concurrency = "1")
    public void onDeadLetter(ConsumerRecord<String, String> record) {
        add(record);
    }
}
