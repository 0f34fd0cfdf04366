package io.sumi.examples.charge;

/** The provider answered with a 5xx or did not answer: retried, and a failure for the budget's breaker. */
public class PaymentProviderUnavailableException extends RuntimeException {

    public PaymentProviderUnavailableException(String message, Throwable cause) {
        super(message, cause);
    }
}
