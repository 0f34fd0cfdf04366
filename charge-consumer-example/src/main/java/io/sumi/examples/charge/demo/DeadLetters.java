package io.sumi.examples.charge.demo;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.kafka.annotation.KafkaListener;

/** Reads the dead-letter topic, so the demo can show that nothing was dead-lettered. */
public class DeadLetters {

    private static final Logger log = LoggerFactory.getLogger(DeadLetters.class);

    private final List<String> keys = new CopyOnWriteArrayList<>();

    @KafkaListener(id = "charge-dead-letters", topics = "${charge-consumer.topic:payment.charge}-dlt")
    public void onDeadLetter(ConsumerRecord<String, String> record) {
        keys.add(String.valueOf(record.key()));
        log.warn("Dead-lettered: {} ({})", record.key(), record.value());
    }

    public int count() {
        return keys.size();
    }
}
