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

    /** The rabbitmq mode's dead-letter queue, recorded as the Kafka dead letters are (the reason from RabbitMQ's x-death). */
    @org.springframework.amqp.rabbit.annotation.RabbitListener(
            id = ID + "-rabbit",
            queues = "${mail-consumer.topic:mail.send}.dlq",
            autoStartup = "${mail-consumer.rabbit-dead-letters:false}")
    public void onRabbitDeadLetter(org.springframework.amqp.core.Message message) {
        ConsumerRecord<String, String> record = new ConsumerRecord<>(
                message.getMessageProperties().getConsumerQueue(),
                0,
                message.getMessageProperties().getDeliveryTag(),
                null,
                new String(message.getBody(), java.nio.charset.StandardCharsets.UTF_8));
        Object death = message.getMessageProperties().getHeaders().get("x-first-death-reason");
        record.headers()
                .add(
                        org.springframework.kafka.support.KafkaHeaders.DLT_EXCEPTION_MESSAGE,
                        String.valueOf(death).getBytes(java.nio.charset.StandardCharsets.UTF_8));
        add(record);
    }
}
