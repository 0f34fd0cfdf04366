package com.example.sumifixtures.clean;

import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentHandler;
import java.util.function.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.springframework.context.annotation.Bean;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.messaging.Message;
import org.springframework.transaction.annotation.Transactional;

/** Every place Sumi's binders guard, and the allowed transactional cases. */
public class GuardedHandlers {

    @KafkaListener(topics = "mail.send")
    @IdempotentHandler(mode = IdempotencyMode.LEASE)
    public void onMail(String payload) {}

    /** Called by a listener through the bean: the message comes from its parameter. */
    @IdempotentHandler
    public void handle(ConsumerRecord<String, String> record) {}

    @Bean
    @IdempotentHandler(mode = IdempotencyMode.LEASE)
    Consumer<Message<String>> sendMail() {
        return message -> {};
    }

    /** Effects in the database: transactional mode with @Transactional is the intended use. */
    @KafkaListener(topics = "orders")
    @IdempotentHandler(mode = IdempotencyMode.TRANSACTIONAL)
    @Transactional
    public void onOrder(String payload) {}

    /** Lease mode in a transaction, with the reason stated. */
    @KafkaListener(topics = "charges")
    @IdempotentHandler(mode = IdempotencyMode.LEASE)
    @Transactional(label = "sumi:lease-reason: the audit row must commit with nothing else; the charge is keyed")
    public void charge(String payload) {}
}
