-- Sumi processed-messages ledger (PostgreSQL).
-- A repeatable migration written with IF NOT EXISTS, so it never clashes with the version
-- numbers of the application's own migrations and can be added to a schema that already exists.
CREATE TABLE IF NOT EXISTS processed_messages (
    consumer      VARCHAR(200)             NOT NULL,
    message_id    VARCHAR(200)             NOT NULL,
    status        VARCHAR(16)              NOT NULL,
    claim_token   BIGINT                   NOT NULL,
    lease_until   TIMESTAMP WITH TIME ZONE,
    attempts      INTEGER                  NOT NULL,
    fingerprint   VARCHAR(64),
    last_error    VARCHAR(1000),
    first_seen_at TIMESTAMP WITH TIME ZONE NOT NULL,
    processed_at  TIMESTAMP WITH TIME ZONE,
    CONSTRAINT processed_messages_pk PRIMARY KEY (consumer, message_id)
);

-- The pruning job reads completed rows by age; in-progress rows never match.
CREATE INDEX IF NOT EXISTS processed_messages_prune_idx
    ON processed_messages (processed_at) WHERE status = 'COMPLETED';

-- Pruning also removes claims released after a failure and never taken again (dead-lettered messages).
CREATE INDEX IF NOT EXISTS processed_messages_abandoned_idx
    ON processed_messages (lease_until) WHERE status = 'IN_PROGRESS';

-- Rows held for reconciliation, per consumer: what the gauge sumi.ledger.reconciliation.held (every
-- few seconds), the ledger's health indicator and the operator's endpoint count. A partial index holds
-- only those rows (none, normally), so the count never scans the ledger.
CREATE INDEX IF NOT EXISTS processed_messages_reconcile_idx
    ON processed_messages (consumer) WHERE status = 'RECONCILE';

-- The reply of a handler that keeps replies (@IdempotentHandler(storeReply = true)), written by the
-- statement that completes the row and pruned with it; NULL for every other row (docs/replies.md).
-- ADD COLUMN IF NOT EXISTS: ledgers created before replies existed gain the column when this
-- repeatable script runs again; a nullable column without a default changes no existing row.
ALTER TABLE processed_messages ADD COLUMN IF NOT EXISTS reply BYTEA;
