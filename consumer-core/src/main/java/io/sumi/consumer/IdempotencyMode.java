package io.sumi.consumer;

/**
 * How a handler's message is taken in the ledger.
 */
public enum IdempotencyMode {

    /**
     * {@link #TRANSACTIONAL} when a transaction is active around the handler (or the handler
     * method is {@code @Transactional}), else {@link #LEASE}.
     */
    AUTO,

    /**
     * The ledger row is inserted {@code COMPLETED} in the same database transaction as the
     * handler's own writes (Sumi opens one if none is active, or joins the active one). Commit
     * stores both, rollback neither: exactly once for effects that are rows in the ledger's
     * database.
     */
    TRANSACTIONAL,

    /**
     * The message is claimed with a lease before the handler runs and completed after it; a
     * failure releases the claim. For effects outside the database (HTTP, SMTP, paid APIs): at
     * least once, so the key goes downstream as the provider's idempotency key.
     */
    LEASE
}
