package io.sumi.budget;

/** The shared spend store failed; the budget refuses the call (fails closed). */
final class SpendStoreUnavailableException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    SpendStoreUnavailableException(String message, Throwable cause) {
        super(message, cause);
    }
}
