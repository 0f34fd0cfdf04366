package io.sumi.examples.charge;

/**
 * The provider answered with a 4xx: the card was declined or the request rejected (also: the same
 * idempotency key with other parameters). An answer, not an outage: not retried, and not a failure
 * of the budget's breaker ({@code sumi.budgets.payments.ignore-exceptions}).
 */
public class PaymentDeclinedException extends RuntimeException {

    public PaymentDeclinedException(String message) {
        super(message);
    }
}
