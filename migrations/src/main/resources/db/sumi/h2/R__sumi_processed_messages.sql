-- Sumi processed-messages ledger (H2 2.x, for tests and local development).
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

CREATE INDEX IF NOT EXISTS processed_messages_prune_idx
    ON processed_messages (status, processed_at);

CREATE INDEX IF NOT EXISTS processed_messages_abandoned_idx
    ON processed_messages (status, lease_until);

-- The reply of a handler that keeps replies (@IdempotentHandler(storeReply = true)), pruned with its row.
ALTER TABLE processed_messages ADD COLUMN IF NOT EXISTS reply VARBINARY;
