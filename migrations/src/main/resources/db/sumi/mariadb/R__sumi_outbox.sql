-- Sumi transactional outbox (MariaDB 10.6+; the claim uses FOR UPDATE SKIP LOCKED).
-- A repeatable migration written with IF NOT EXISTS, like the ledger's: it never clashes with the
-- version numbers of the application's own migrations and can be added to an existing schema.
-- Times are UTC in DATETIME(6) columns: Sumi binds and reads them as UTC, whatever the session
-- or JVM time zone.
--
-- A row is pending while dispatched_at IS NULL. MariaDB has no UPDATE ... RETURNING, so the
-- dispatcher claims rows by writing a random claim_token and lease_until in one UPDATE (committed
-- at once), then reads its rows back by that token: outbox_claim_idx serves that read.
-- MariaDB has no partial indexes: outbox_pending_idx on dispatched_at (InnoDB appends the primary
-- key) gives the pending rows in id order, and also the dispatched rows by age for retention.
--
-- aggregate_id and topic are compared exactly: utf8mb4_nopad_bin, a binary NO PAD collation, as the
-- ledger's key columns. utf8mb4_bin is PAD SPACE: it made aggregates 'A' and 'A ' one (each waited
-- for the other's earlier rows) and a topic 'orders ' the ordered topic 'orders'.
CREATE TABLE IF NOT EXISTS outbox (
    id               BIGINT        NOT NULL AUTO_INCREMENT,
    aggregate_id     VARCHAR(200)  CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
    topic            VARCHAR(255)  CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
    payload          LONGTEXT      NOT NULL,
    headers          TEXT          NOT NULL,
    created_at       DATETIME(6)   NOT NULL,
    available_at     DATETIME(6)   NOT NULL,
    dispatched_at    DATETIME(6),
    attempts         INT           NOT NULL DEFAULT 0,
    last_error       VARCHAR(1000),
    claim_token      BIGINT,
    lease_until      DATETIME(6),
    parked_at        DATETIME(6),
    dispatch_outcome VARCHAR(16),
    PRIMARY KEY (id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Outboxes created before these columns were NO PAD: change them in place. Lossless: every row keeps
-- its exact text (no key or unique index depends on the two columns, so no row can clash); NO PAD
-- only tells more values apart. InnoDB rebuilds the table once (outbox_aggregate_idx changes
-- collation); when the columns already have this definition it changes nothing.
ALTER TABLE outbox
    MODIFY aggregate_id VARCHAR(200) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
    MODIFY topic        VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL;

CREATE INDEX IF NOT EXISTS outbox_pending_idx
    ON outbox (dispatched_at);

-- Per-aggregate order: "is there an earlier undispatched row of this topic and aggregate?"
CREATE INDEX IF NOT EXISTS outbox_aggregate_idx
    ON outbox (topic, aggregate_id, dispatched_at);

CREATE INDEX IF NOT EXISTS outbox_claim_idx
    ON outbox (claim_token);
