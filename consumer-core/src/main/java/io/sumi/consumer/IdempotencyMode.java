package io.sumi.consumer;

/**
 * How a handler's message is taken in the ledger.
 */
public enum IdempotencyMode {

    /**
     * {@link #TRANSACTIONAL} when a transaction that the ledger's DataSource takes part in is active
     * around the handler (or the handler method is {@code @Transactional} with the default
     * transaction manager), else {@link #LEASE}. A transaction of another resource only (a Kafka
     * transaction, another DataSource's) means {@link #LEASE}: a ledger row there would commit on
     * its own (see {@link TransactionSupport}).
     */
    AUTO,

    /**
     * The ledger row is inserted {@code COMPLETED} in the same database transaction as the
     * handler's own writes (Sumi opens one if none is active, or joins the active one). Commit
     * stores both, rollback neither: exactly once for effects that are rows in the ledger's
     * database. Refused with {@code IllegalTransactionStateException}, before anything is claimed,
     * when the transaction it would run in does not hold the ledger's connection.
     */
    TRANSACTIONAL,

    /**
     * The message is claimed with a lease before the handler runs and completed after it; a
     * failure releases the claim. For effects outside the database (HTTP, SMTP, paid APIs): at
     * least once, so the key goes downstream as the provider's idempotency key.
     */
    LEASE
}
