package io.sumi.faults.app;

import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentHandler;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.stereotype.Component;

/** The listeners as a Sumi user writes them (the guarded run). */
@Component
@ConditionalOnProperty(name = "fault.broker", havingValue = "kafka", matchIfMissing = true)
@ConditionalOnProperty(name = "fault.guard", havingValue = "true", matchIfMissing = true)
public class GuardedListeners {

    private final Shipments shipments;
    private final PaymentProviderClient provider;

    GuardedListeners(Shipments shipments, PaymentProviderClient provider) {
        this.shipments = shipments;
        this.provider = provider;
    }

    /** The shipment row and the ledger row commit together. */
    @KafkaListener(id = "shipments", topics = "${fault.topic:orders}")
    @IdempotentHandler(mode = IdempotencyMode.TRANSACTIONAL)
    public void ship(String orderId) {
        shipments.ship(orderId);
    }

    /** Claimed with a lease; the outbox id reaches the provider as its Idempotency-Key. */
    @KafkaListener(id = "charges", topics = "${fault.topic:orders}")
    @IdempotentHandler(mode = IdempotencyMode.LEASE)
    public void charge(String orderId) {
        provider.charge(orderId);
    }
}
