package io.sumi.faults.app;

import org.springframework.amqp.rabbit.annotation.RabbitListener;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.stereotype.Component;
import org.springframework.transaction.annotation.Transactional;

/**
 * The RabbitMQ mode's listeners without Sumi (its negative control): the shipment in a
 * transaction of its own, the charge without an idempotency key. A message redelivered after a
 * kill or a broker restart, or published twice by the outbox, shows up as a second shipment or a
 * second real charge.
 */
@Component
@ConditionalOnProperty(name = "fault.broker", havingValue = "rabbit")
@ConditionalOnProperty(name = "fault.guard", havingValue = "false")
public class RabbitPlainListeners {

    private final Shipments shipments;
    private final PaymentProviderClient provider;

    RabbitPlainListeners(Shipments shipments, PaymentProviderClient provider) {
        this.shipments = shipments;
        this.provider = provider;
    }

    @RabbitListener(id = "shipments", queues = "shipments")
    @Transactional
    public void ship(String orderId) {
        shipments.ship(orderId);
    }

    @RabbitListener(id = "charges", queues = "charges")
    public void charge(String orderId) {
        provider.charge(orderId);
    }
}
