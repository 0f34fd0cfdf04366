package io.sumi.faults.app;

import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentHandler;
import org.springframework.amqp.rabbit.annotation.RabbitListener;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.stereotype.Component;

/**
 * The RabbitMQ mode's listeners as a Sumi user writes them (the guarded run): one quorum queue
 * per consumer, both bound to the outbox's {@code orders} exchange, the key from the
 * {@code outbox-id} header the outbox's RabbitMQ publisher sets.
 */
@Component
@ConditionalOnProperty(name = "fault.broker", havingValue = "rabbit")
@ConditionalOnProperty(name = "fault.guard", havingValue = "true", matchIfMissing = true)
public class RabbitGuardedListeners {

    private final Shipments shipments;
    private final PaymentProviderClient provider;

    RabbitGuardedListeners(Shipments shipments, PaymentProviderClient provider) {
        this.shipments = shipments;
        this.provider = provider;
    }

    /** The shipment row and the ledger row commit together. */
    @RabbitListener(id = "shipments", queues = "shipments")
    @IdempotentHandler(mode = IdempotencyMode.TRANSACTIONAL)
    public void ship(String orderId) {
        shipments.ship(orderId);
    }

    /** Claimed with a lease; the outbox id reaches the provider as its Idempotency-Key. */
    @RabbitListener(id = "charges", queues = "charges")
    @IdempotentHandler(mode = IdempotencyMode.LEASE)
    public void charge(String orderId) {
        provider.charge(orderId);
    }
}
