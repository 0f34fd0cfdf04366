-- Sumi fleet budgets (PostgreSQL): what a fleet of instances spends per budget and window.
-- A repeatable migration written with IF NOT EXISTS, like the ledger's.
--
-- sumi_budget_limit: the limit in force for the whole fleet (configured_limit: the limit last
-- configured by a starting instance, so that a changed configuration applies on deploy, while a
-- limit set at run time survives the restarts of instances configured as before).
CREATE TABLE IF NOT EXISTS sumi_budget_limit (
    budget_name      VARCHAR(200)             NOT NULL,
    spend_limit      DOUBLE PRECISION         NOT NULL,
    configured_limit DOUBLE PRECISION         NOT NULL,
    updated_at       TIMESTAMP WITH TIME ZONE NOT NULL,
    CONSTRAINT sumi_budget_limit_pk PRIMARY KEY (budget_name)
);

-- sumi_budget_spend: one row per budget and fixed window (window_start: epoch milliseconds,
-- a multiple of the window length); spent: what the instances reserved in it.
CREATE TABLE IF NOT EXISTS sumi_budget_spend (
    budget_name  VARCHAR(200)     NOT NULL,
    window_start BIGINT           NOT NULL,
    spent        DOUBLE PRECISION NOT NULL,
    CONSTRAINT sumi_budget_spend_pk PRIMARY KEY (budget_name, window_start)
);
