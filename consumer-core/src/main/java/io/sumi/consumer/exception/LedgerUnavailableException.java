package io.sumi.consumer.exception;

/**
 * One of Sumi's own ledger statements for the message (its claim, completion or release) failed
 * because the ledger's database could not be reached: a lost or refused connection (SQLSTATE class
 * {@code 08}, {@link java.sql.SQLTransientConnectionException} and the other JDBC connection
 * exceptions, Spring's {@code DataAccessResourceFailureException} and
 * {@code TransientDataAccessResourceException}, a pool that could not give a connection). It is
 * not the message's fault and not the handler's: retryable, and the binders hold the message in
 * place and run it again (as a busy key) instead of spending the broker's redelivery budget on it,
 * for as long as the ledger stays unreachable and the container runs.
 *
 * <p>Raised only for Sumi's own ledger calls: an exception the handler throws, whatever its cause
 * (an {@link java.sql.SQLException} of the handler's own database included), propagates unchanged.
 * The original failure is the cause.
 *
 * @since 0.1.0
 */
public class LedgerUnavailableException extends IdempotencyException {

    private final String consumer;
    private final String call;

    /**
     * @param consumer the consumer whose ledger call failed
     * @param call the ledger call, e.g. {@code "claim"}, {@code "complete"}, {@code "release"}
     * @param cause the ledger's failure
     */
    public LedgerUnavailableException(String consumer, String call, Throwable cause) {
        super(
                "The ledger is unreachable: the " + call + " of consumer '" + consumer
                        + "' failed (" + cause.getClass().getName()
                        + (cause.getMessage() != null ? ": " + cause.getMessage() : "")
                        + "); the message is kept and tried again once the ledger answers",
                cause);
        this.consumer = consumer;
        this.call = call;
    }

    /** The consumer whose ledger call failed. */
    public String consumer() {
        return consumer;
    }

    /** Which ledger call failed ({@code claim}, {@code complete}, {@code release}, ...). */
    public String call() {
        return call;
    }

    /** {@link Verdict#LEDGER_UNAVAILABLE}. */
    @Override
    public Verdict verdict() {
        return Verdict.LEDGER_UNAVAILABLE;
    }

    @Override
    public boolean isRetryable() {
        return true;
    }
}
