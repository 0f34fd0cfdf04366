-- Sumi fleet budgets (MariaDB 10.5+). See the PostgreSQL script for what the tables hold.
-- Budget names are compared exactly (utf8mb4_nopad_bin), like the ledger's keys.
CREATE TABLE IF NOT EXISTS sumi_budget_limit (
    budget_name      VARCHAR(200) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
    spend_limit      DOUBLE       NOT NULL,
    configured_limit DOUBLE       NOT NULL,
    updated_at       DATETIME(6)  NOT NULL,
    PRIMARY KEY (budget_name)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE IF NOT EXISTS sumi_budget_spend (
    budget_name  VARCHAR(200) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
    window_start BIGINT       NOT NULL,
    spent        DOUBLE       NOT NULL,
    PRIMARY KEY (budget_name, window_start)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
