package io.sumi.examples.charge;

import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentHandler;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.stereotype.Component;

/**
 * Charges each order once. The whole of Sumi in this class is one annotation:
 * <ul>
 *   <li>{@code mode = LEASE}: the charge leaves the database, so the ledger claims the key before
 *   the call and completes it after; a redelivery of a completed key is skipped;</li>
 *   <li>{@code budget = "payments"}: every charge call spends the {@code payments} budget
 *   ({@code sumi.budgets.payments.*}); when it is spent the call fails fast and the listener
 *   container pauses until the budget's window has room again.</li>
 * </ul>
 * The key reaches the provider as its {@code Idempotency-Key} through the {@link PaymentGateway}'s
 * client, with no code here.
 */
@Component
public class ChargeListener {

    private static final Logger log = LoggerFactory.getLogger(ChargeListener.class);

    private final PaymentGateway gateway;

    public ChargeListener(PaymentGateway gateway) {
        this.gateway = gateway;
    }

    @KafkaListener(id = "charges", topics = "${charge-consumer.topic:payment.charge}")
    @IdempotentHandler(mode = IdempotencyMode.LEASE, budget = "payments")
    public void charge(String payload) {
        ChargeRequest request = ChargeRequest.parse(payload);
        String chargeId = gateway.charge(request);
        log.debug(
                "Charged {} {} {} for {}: {}",
                request.amount(),
                request.currency(),
                request.customer(),
                request.order(),
                chargeId);
    }
}
