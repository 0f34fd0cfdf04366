-- Sumi processed-messages ledger (MariaDB 10.5+; the claim uses INSERT ... RETURNING).
-- A repeatable migration written with IF NOT EXISTS, so it never clashes with the version
-- numbers of the application's own migrations and can be added to a schema that already exists.
-- Times are UTC in DATETIME(6) columns: the store writes them with UTC_TIMESTAMP(6), the
-- database's clock, and reads them as UTC, whatever the session or JVM time zone.
--
-- Keys are compared exactly: the key columns use utf8mb4_nopad_bin, a binary NO PAD collation.
-- utf8mb4_bin is PAD SPACE: it makes 'k' and 'k ' one primary key, so a claim of 'k ' would find
-- the row of 'k' (and then answer BUSY for ever). utf8mb4_nopad_bin compares code points with no
-- padding, like PostgreSQL and H2 compare VARCHAR.
CREATE TABLE IF NOT EXISTS processed_messages (
    consumer      VARCHAR(200)  CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
    message_id    VARCHAR(200)  CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
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

-- Ledgers created before the key columns were NO PAD: change them in place. Lossless: every
-- existing key keeps its exact text, and keys that were distinct under PAD SPACE stay distinct
-- under NO PAD (it only tells more keys apart). InnoDB rebuilds the table once (the primary key
-- changes collation); when the columns already have this definition it changes nothing.
ALTER TABLE processed_messages
    MODIFY consumer   VARCHAR(200) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
    MODIFY message_id VARCHAR(200) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL;

CREATE INDEX IF NOT EXISTS processed_messages_prune_idx
    ON processed_messages (status, processed_at);

-- Pruning also removes claims released after a failure and never taken again (dead-lettered messages).
CREATE INDEX IF NOT EXISTS processed_messages_abandoned_idx
    ON processed_messages (status, lease_until);

-- The reply of a handler that keeps replies (@IdempotentHandler(storeReply = true)), written by the
-- statement that completes the row and pruned with it; NULL for every other row (docs/replies.md).
-- ADD COLUMN IF NOT EXISTS: ledgers created before replies existed gain the column when this
-- repeatable script runs again. MEDIUMBLOB holds up to 16 MiB (sumi.consumer.reply.max-size is
-- checked against it); BLOB (64 KiB) would refuse replies near the default limit.
ALTER TABLE processed_messages ADD COLUMN IF NOT EXISTS reply MEDIUMBLOB;
