package io.sumi.examples.charge.demo;

import io.sumi.examples.support.DeadLetterLog;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.springframework.kafka.annotation.KafkaListener;

/** Reads the dead-letter topic, so the demo can show that nothing was dead-lettered. */
public class DeadLetters extends DeadLetterLog {

    @KafkaListener(id = "charge-dead-letters", topics = "${charge-consumer.topic:payment.charge}-dlt")
    public void onDeadLetter(ConsumerRecord<String, String> record) {
        add(record);
    }
}
