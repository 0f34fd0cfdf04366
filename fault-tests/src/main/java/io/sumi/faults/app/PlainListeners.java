package io.sumi.faults.app;

import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.stereotype.Component;
import org.springframework.transaction.annotation.Transactional;

/**
 * The same listeners without Sumi (the negative control): the shipment is written in a
 * transaction of its own, the charge goes out without an idempotency key. Every redelivery after
 * a crash then shows up as a second shipment or a second real charge.
 */
@Component
@ConditionalOnProperty(name = "fault.broker", havingValue = "kafka", matchIfMissing = true)
@ConditionalOnProperty(name = "fault.guard", havingValue = "false")
public class PlainListeners {

    private final Shipments shipments;
    private final PaymentProviderClient provider;

    PlainListeners(Shipments shipments, PaymentProviderClient provider) {
        this.shipments = shipments;
        this.provider = provider;
    }

    @KafkaListener(id = "shipments", topics = "${fault.topic:orders}")
    @Transactional
    public void ship(String orderId) {
        shipments.ship(orderId);
    }

    @KafkaListener(id = "charges", topics = "${fault.topic:orders}")
    public void charge(String orderId) {
        provider.charge(orderId);
    }
}
