package com.example.sumifixtures.violating;

import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentHandler;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.transaction.annotation.Transactional;

/** A lease-mode handler in a transaction, without a reason. */
public class TransactionalLeaseHandler {

    @KafkaListener(topics = "charges")
    @IdempotentHandler(mode = IdempotencyMode.LEASE)
    @Transactional
    public void charge(String payload) {}
}
