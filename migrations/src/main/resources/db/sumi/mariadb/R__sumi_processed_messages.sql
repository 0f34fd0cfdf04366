-- Sumi processed-messages ledger (MariaDB 10.5+; the claim uses INSERT ... RETURNING).
-- A repeatable migration written with IF NOT EXISTS, so it never clashes with the version
-- numbers of the application's own migrations and can be added to a schema that already exists.
-- Times are UTC in DATETIME(6) columns: the store binds and reads them as UTC, whatever the
-- session or JVM time zone.
CREATE TABLE IF NOT EXISTS processed_messages (
    consumer      VARCHAR(200)  NOT NULL,
    message_id    VARCHAR(200)  NOT NULL,
    status        VARCHAR(16)   NOT NULL,
    claim_token   BIGINT        NOT NULL,
    lease_until   DATETIME(6),
    attempts      INT           NOT NULL,
    fingerprint   VARCHAR(64),
    last_error    VARCHAR(1000),
    first_seen_at DATETIME(6)   NOT NULL,
    processed_at  DATETIME(6),
    PRIMARY KEY (consumer, message_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE INDEX IF NOT EXISTS processed_messages_prune_idx
    ON processed_messages (status, processed_at);

-- Pruning also removes claims released after a failure and never taken again (dead-lettered messages).
CREATE INDEX IF NOT EXISTS processed_messages_abandoned_idx
    ON processed_messages (status, lease_until);
